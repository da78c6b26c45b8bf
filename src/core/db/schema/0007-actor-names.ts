/**
 * Actors by name.
 *
 * A query word that is the whole id of a person or agent in the memory ("what did Caroline
 * say …") names whose turns are asked about; as a keyword it would rank the other side's
 * turns that address that person by name. Search looks each query word up here to leave
 * such words out of the keyword ranking (`actorNameTerm`, docs/retrieval-and-context.md).
 * Tools are not people: a tool's name in a query stays a keyword.
 */
export const actorNames = `
CREATE INDEX events_actor_names ON events (tenant_id, lower(actor_id)) WHERE actor_type <> 'tool';
`
