/**
 * For memories that several processes write (on a PostgreSQL server); PGlite has one writer,
 * and the changes cost it nothing.
 *
 * - `writer_clock`: the latest time a writer gave. A process takes its turn to write, raises
 *   its clock to this time, and stores its own latest time when the turn ends, so no process
 *   dates a row before one written earlier by another (src/core/kernel/write-turns.ts). One row
 *   at most.
 * - `engram_keyword_stats_apply()` locks its mark before it reads it. A search or a statistics
 *   refresh in one process may count the waiting chunks while another does: each read the same
 *   mark and counted the same chunks twice.
 */
export const severalWriters = `
CREATE TABLE writer_clock (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  at timestamptz NOT NULL
);

CREATE OR REPLACE FUNCTION engram_keyword_stats_apply() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  -- Held until the caller's transaction ends; a second caller then reads the moved mark.
  done bigint := (SELECT upto FROM keyword_counted FOR UPDATE);
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
`
