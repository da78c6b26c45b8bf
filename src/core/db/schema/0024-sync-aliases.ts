/**
 * Ids a sync retired (src/core/kernel/aliases.ts). Two devices that saw one file made two
 * documents, and two that saw the same content made two versions; a sync keeps one of each.
 * The other id stays valid here: reads by id follow it to the row that took its place. Not
 * exported: the ids belong to this database's history.
 */
export const syncAliases = `
CREATE TABLE sync_aliases (
  old_id     text PRIMARY KEY,
  new_id     text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX sync_aliases_new ON sync_aliases (new_id);
`
