/**
 * New chunks' terms are counted into `term_stats` in batches instead of by every write. Each
 * chunk written from now on takes the next number of `chunks_stats_seq` (`chunks.stats_seq`;
 * older chunks have none and are counted already), and `keyword_counted.upto` is the last
 * number counted: a chunk numbered above it is waiting. A write updates `chunk_stats` as before;
 * the waiting chunks' document frequencies are added all at once by
 * `engram_keyword_stats_apply()`: when the writes pause, at a statistics refresh, and within the
 * write that leaves `KEYWORD_PENDING_BOUND` numbers or more waiting. A search adds what the
 * waiting chunks hold of its own terms to what `term_stats` says, so it scores exactly as if
 * every chunk were counted. Before, each write's trigger upserted a row of `term_stats` for
 * every distinct term of its chunks (about 180 rows for a turn of `npm run bench`'s sessions).
 */

/** Chunk numbers that may wait before a write counts them all within itself. */
export const KEYWORD_PENDING_BOUND = 1024

export const keywordPending = `
CREATE SEQUENCE chunks_stats_seq;
-- No default for the rows already there (no rewrite of the table): they are counted.
ALTER TABLE chunks ADD COLUMN stats_seq bigint;
ALTER TABLE chunks ALTER COLUMN stats_seq SET DEFAULT nextval('chunks_stats_seq');
CREATE INDEX chunks_by_stats_seq ON chunks (stats_seq) WHERE stats_seq IS NOT NULL;

CREATE TABLE keyword_counted (upto bigint NOT NULL);
INSERT INTO keyword_counted (upto) VALUES (0);

-- Adds the waiting chunks' terms to term_stats and moves the mark past them.
CREATE FUNCTION engram_keyword_stats_apply() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  done bigint := (SELECT upto FROM keyword_counted);
  last bigint := (SELECT max(stats_seq) FROM chunks WHERE stats_seq > done);
BEGIN
  IF last IS NULL THEN RETURN; END IF;
  INSERT INTO term_stats AS s (tenant_id, lexeme, sensitivity, df)
  SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*)
  FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u
  WHERE c.stats_seq > done AND c.stats_seq <= last
  GROUP BY 1, 2, 3
  ON CONFLICT (tenant_id, lexeme, sensitivity) DO UPDATE SET df = s.df + excluded.df;
  UPDATE keyword_counted SET upto = last;
END $$;

CREATE OR REPLACE FUNCTION engram_keyword_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO chunk_stats AS s (tenant_id, sensitivity, chunks, lexemes)
  SELECT tenant_id, sensitivity, count(*), sum(length(tsv)) FROM new_chunks GROUP BY 1, 2
  ON CONFLICT (tenant_id, sensitivity)
    DO UPDATE SET chunks = s.chunks + excluded.chunks, lexemes = s.lexemes + excluded.lexemes;
  IF (SELECT max(stats_seq) FROM new_chunks) - (SELECT upto FROM keyword_counted) >= ${KEYWORD_PENDING_BOUND} THEN
    PERFORM engram_keyword_stats_apply();
  END IF;
  RETURN NULL;
END $$;

-- A deleted chunk that was counted is taken out of term_stats; one still waiting just goes.
CREATE OR REPLACE FUNCTION engram_keyword_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE term_stats s SET df = s.df - o.n
  FROM (SELECT d.tenant_id, u.lexeme, d.sensitivity, count(*) AS n
        FROM old_chunks d CROSS JOIN LATERAL unnest(d.tsv) u
        WHERE d.stats_seq IS NULL OR d.stats_seq <= (SELECT upto FROM keyword_counted)
        GROUP BY 1, 2, 3) o
  WHERE s.tenant_id = o.tenant_id AND s.lexeme = o.lexeme AND s.sensitivity = o.sensitivity;
  DELETE FROM term_stats WHERE df <= 0;
  UPDATE chunk_stats s SET chunks = s.chunks - o.n, lexemes = s.lexemes - o.l
  FROM (SELECT tenant_id, sensitivity, count(*) AS n, sum(length(tsv)) AS l FROM old_chunks GROUP BY 1, 2) o
  WHERE s.tenant_id = o.tenant_id AND s.sensitivity = o.sensitivity;
  DELETE FROM chunk_stats WHERE chunks <= 0;
  RETURN NULL;
END $$;
`
