/** Each lexeme of the id of every distinct actor (tenant and id) of `source`. */
const actorLexemes = (source: string) => `SELECT a.tenant_id, a.actor_id, l.lexeme
  FROM (SELECT DISTINCT tenant_id, actor_id FROM ${source}) a
  CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', a.actor_id))) l(lexeme)`

/**
 * The words of every actor's id, per tenant: `actor_terms` holds each lexeme of
 * `to_tsvector('english', actor_id)` for every actor with an event in the tenant. A search
 * reads the actors its query names from here, one probe of `actor_terms_by_lexeme` per term,
 * instead of taking every listed event's actor apart; when the query names none (and no
 * period), no listed event can get `actorMatch` or `dateMatch`, and only the events that can
 * be hits are looked up (src/core/retrieval/search.ts, "fused").
 *
 * An insert into `events` adds the actors it has not seen (one probe of the primary key per
 * distinct actor of the statement); a delete takes out the actors left with no event, so a
 * forgotten person's id does not stay behind.
 */
export const actorTerms = `
CREATE TABLE actor_terms (
  tenant_id text NOT NULL,
  actor_id  text NOT NULL,
  lexeme    text NOT NULL,
  PRIMARY KEY (tenant_id, actor_id, lexeme)
);
CREATE INDEX actor_terms_by_lexeme ON actor_terms (tenant_id, lexeme);

CREATE FUNCTION engram_actor_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO actor_terms (tenant_id, actor_id, lexeme)
  ${actorLexemes('added')}
  WHERE NOT EXISTS (SELECT 1 FROM actor_terms t WHERE t.tenant_id = a.tenant_id AND t.actor_id = a.actor_id)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER events_actor_terms_add AFTER INSERT ON events
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION engram_actor_terms_add();

CREATE FUNCTION engram_actor_terms_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM actor_terms t
  USING (SELECT DISTINCT d.tenant_id, d.actor_id FROM removed d) r
  WHERE t.tenant_id = r.tenant_id AND t.actor_id = r.actor_id
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = r.tenant_id AND e.actor_id = r.actor_id);
  RETURN NULL;
END $$;
CREATE TRIGGER events_actor_terms_remove AFTER DELETE ON events
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION engram_actor_terms_remove();

INSERT INTO actor_terms (tenant_id, actor_id, lexeme)
${actorLexemes('events')};
`
