/**
 * Sizes of the curated memories for BM25: how many memories and terms each group of them
 * holds, a group being one combination of the columns a memory search selects on (tenant,
 * user, agent, run, project, scope, category, sensitivity, status), kept by a trigger on
 * memories. A search without a filter expression sums the groups its selection names instead
 * of reading every memory in it, so the pool's size and mean length cost a few rows however
 * many memories it holds; its document frequencies still come from the memories that hold
 * its words. A change to any of those columns, or to the text, moves the memory between
 * counts; a recall's use counter does not touch them.
 */
export const memoryStats = `
CREATE TABLE memory_stats (
  tenant_id   text NOT NULL,
  user_id     text,
  agent_id    text,
  run_id      text,
  project_id  text,
  scope       text NOT NULL,
  category    text NOT NULL,
  sensitivity text NOT NULL,
  status      text NOT NULL,
  memories    bigint NOT NULL,
  lexemes     bigint NOT NULL
);
CREATE UNIQUE INDEX memory_stats_group ON memory_stats
  (tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status) NULLS NOT DISTINCT;

CREATE FUNCTION engram_memory_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE memory_stats s SET memories = s.memories - 1, lexemes = s.lexemes - greatest(length(OLD.tsv), 1)
    WHERE s.tenant_id = OLD.tenant_id AND s.user_id IS NOT DISTINCT FROM OLD.user_id
      AND s.agent_id IS NOT DISTINCT FROM OLD.agent_id AND s.run_id IS NOT DISTINCT FROM OLD.run_id
      AND s.project_id IS NOT DISTINCT FROM OLD.project_id AND s.scope = OLD.scope
      AND s.category = OLD.category AND s.sensitivity = OLD.sensitivity AND s.status = OLD.status;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO memory_stats AS s
      (tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status, memories, lexemes)
    VALUES (NEW.tenant_id, NEW.user_id, NEW.agent_id, NEW.run_id, NEW.project_id, NEW.scope, NEW.category,
            NEW.sensitivity, NEW.status, 1, greatest(length(NEW.tsv), 1))
    ON CONFLICT (tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status)
      DO UPDATE SET memories = s.memories + 1, lexemes = s.lexemes + excluded.lexemes;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    DELETE FROM memory_stats WHERE memories <= 0;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER memories_stats_insert_delete AFTER INSERT OR DELETE ON memories
  FOR EACH ROW EXECUTE FUNCTION engram_memory_stats();
CREATE TRIGGER memories_stats_update
  AFTER UPDATE OF tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status, content
  ON memories FOR EACH ROW EXECUTE FUNCTION engram_memory_stats();

INSERT INTO memory_stats
  (tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status, memories, lexemes)
SELECT tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status,
       count(*), sum(greatest(length(tsv), 1))
FROM memories GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
`
