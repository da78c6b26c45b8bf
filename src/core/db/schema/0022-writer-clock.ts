/**
 * The latest time a writer gave, for memories that several processes write (on a PostgreSQL
 * server). A process takes its turn to write, raises its clock to this time, and stores its own
 * latest time when the turn ends, so no process dates a row before one written earlier by
 * another (src/core/kernel/write-turns.ts). One row at most; PGlite never writes it.
 */
export const writerClock = `
CREATE TABLE writer_clock (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  at timestamptz NOT NULL
);
`
