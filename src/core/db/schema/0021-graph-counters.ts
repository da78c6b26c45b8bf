/**
 * Two counters the Cypher graph (src/core/cypher) reads before each query, to know whether to
 * catch up with the tables it is drawn from. `graph_writes` moves on every statement that
 * changes one of them; `graph_resets` also moves on a change the graph cannot follow by time
 * (a delete, a rewrite of stored content, an import of back-dated rows), which makes it
 * redraw the graph whole. They are sequences: counting costs no row, and a rolled-back
 * change only causes one needless catch-up.
 */
export const graphCounters = `
CREATE SEQUENCE graph_writes;
CREATE SEQUENCE graph_resets;

CREATE FUNCTION engram_graph_wrote() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM nextval('graph_writes');
  IF TG_OP <> 'INSERT' AND TG_ARGV[0] = 'reset' THEN PERFORM nextval('graph_resets'); END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
CREATE TRIGGER documents_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON documents
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
CREATE TRIGGER doc_versions_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON doc_versions
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
CREATE TRIGGER memory_contexts_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memory_contexts
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
CREATE TRIGGER nodes_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON nodes
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
-- An edge's tombstone and a memory's change are dated, so a catch-up finds them by time.
CREATE TRIGGER edges_graph AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON edges
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('dated');
CREATE TRIGGER edges_graph_reset AFTER DELETE OR TRUNCATE ON edges
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
CREATE TRIGGER memories_graph AFTER INSERT OR UPDATE OF content, status, superseded_by, updated_at, expires_at, sensitivity
  ON memories FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('dated');
CREATE TRIGGER memories_graph_reset AFTER DELETE OR TRUNCATE ON memories
  FOR EACH STATEMENT EXECUTE FUNCTION engram_graph_wrote('reset');
`
