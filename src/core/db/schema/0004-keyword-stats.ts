/**
 * Keyword statistics for BM25: how many chunks hold each term (df) and how many chunks and
 * terms there are, kept per tenant and sensitivity by triggers on chunks. A search reads the
 * few rows for its own terms instead of counting over every chunk, and sums only the
 * sensitivities its reader may see, so scores never depend on chunks the reader cannot see.
 * Chunks are immutable apart from their vectors; a change to their text, tenant or
 * sensitivity is refused (delete and insert instead) so these counts cannot drift.
 */
export const keywordStats = `
-- No autovacuum runs in PGlite, so a GIN index's pending list (fastupdate) is merged only when
-- it fills up (4 MB), and every search scans it meanwhile. Inserts go straight to the index.
ALTER INDEX chunks_tsv SET (fastupdate = off);
ALTER INDEX events_tags SET (fastupdate = off);
SELECT gin_clean_pending_list('chunks_tsv'::regclass);
SELECT gin_clean_pending_list('events_tags'::regclass);

CREATE TABLE term_stats (
  tenant_id   text NOT NULL,
  lexeme      text NOT NULL,
  sensitivity text NOT NULL,
  df          int NOT NULL,
  PRIMARY KEY (tenant_id, lexeme, sensitivity)
);

CREATE TABLE chunk_stats (
  tenant_id   text NOT NULL,
  sensitivity text NOT NULL,
  chunks      bigint NOT NULL,
  lexemes     bigint NOT NULL,
  PRIMARY KEY (tenant_id, sensitivity)
);

CREATE FUNCTION engram_keyword_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO term_stats AS s (tenant_id, lexeme, sensitivity, df)
  SELECT n.tenant_id, u.lexeme, n.sensitivity, count(*)
  FROM new_chunks n CROSS JOIN LATERAL unnest(n.tsv) u
  GROUP BY 1, 2, 3
  ON CONFLICT (tenant_id, lexeme, sensitivity) DO UPDATE SET df = s.df + excluded.df;
  INSERT INTO chunk_stats AS s (tenant_id, sensitivity, chunks, lexemes)
  SELECT tenant_id, sensitivity, count(*), sum(length(tsv)) FROM new_chunks GROUP BY 1, 2
  ON CONFLICT (tenant_id, sensitivity)
    DO UPDATE SET chunks = s.chunks + excluded.chunks, lexemes = s.lexemes + excluded.lexemes;
  RETURN NULL;
END $$;

CREATE FUNCTION engram_keyword_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE term_stats s SET df = s.df - o.n
  FROM (SELECT d.tenant_id, u.lexeme, d.sensitivity, count(*) AS n
        FROM old_chunks d CROSS JOIN LATERAL unnest(d.tsv) u GROUP BY 1, 2, 3) o
  WHERE s.tenant_id = o.tenant_id AND s.lexeme = o.lexeme AND s.sensitivity = o.sensitivity;
  DELETE FROM term_stats WHERE df <= 0;
  UPDATE chunk_stats s SET chunks = s.chunks - o.n, lexemes = s.lexemes - o.l
  FROM (SELECT tenant_id, sensitivity, count(*) AS n, sum(length(tsv)) AS l FROM old_chunks GROUP BY 1, 2) o
  WHERE s.tenant_id = o.tenant_id AND s.sensitivity = o.sensitivity;
  DELETE FROM chunk_stats WHERE chunks <= 0;
  RETURN NULL;
END $$;

CREATE FUNCTION engram_chunks_text_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.text IS DISTINCT FROM OLD.text OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
     OR NEW.sensitivity IS DISTINCT FROM OLD.sensitivity THEN
    RAISE EXCEPTION 'engram: a chunk''s text, tenant and sensitivity are fixed (delete and insert instead)'
      USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER chunks_keyword_stats_insert AFTER INSERT ON chunks
  REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION engram_keyword_stats_add();
CREATE TRIGGER chunks_keyword_stats_delete AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION engram_keyword_stats_remove();
CREATE TRIGGER chunks_text_fixed BEFORE UPDATE OF text, tenant_id, sensitivity ON chunks
  FOR EACH ROW EXECUTE FUNCTION engram_chunks_text_guard();

INSERT INTO term_stats (tenant_id, lexeme, sensitivity, df)
SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*)
FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u
GROUP BY 1, 2, 3;

INSERT INTO chunk_stats (tenant_id, sensitivity, chunks, lexemes)
SELECT tenant_id, sensitivity, count(*), sum(length(tsv)) FROM chunks GROUP BY 1, 2;
`
