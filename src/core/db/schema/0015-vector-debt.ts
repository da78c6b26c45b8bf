/**
 * Vectors deleted from the chunks (or replaced) since their HNSW index was last built. VACUUM repairs the
 * index around every deleted vector, searching new neighbours for each vector that had it as
 * one; past about one deleted in a hundred that is nearly every vector, and the repair costs
 * more than building the index again (docs/indexing-and-embeddings.md, "Deleted vectors").
 * The statistics refresh reads this count before it vacuums; building the index resets it.
 */
export const vectorDebt = `
CREATE TABLE vector_debt (
  id     boolean PRIMARY KEY DEFAULT true CHECK (id),
  chunks bigint NOT NULL DEFAULT 0
);
INSERT INTO vector_debt DEFAULT VALUES;

CREATE FUNCTION engram_vector_debt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE vector_debt SET chunks = chunks + (SELECT count(*) FROM old_vectors WHERE embedding IS NOT NULL);
  RETURN NULL;
END $$;

CREATE TRIGGER chunks_vector_debt AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS old_vectors FOR EACH STATEMENT EXECUTE FUNCTION engram_vector_debt();

-- A vector replaced by another (a new model's, of the same length) leaves the old one's entry
-- behind as well. Filling a chunk that had none, the usual write, does not fire this; clearing
-- every vector (rebuildIndex) counts what it cleared itself, in one statement.
CREATE FUNCTION engram_vector_replaced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE vector_debt SET chunks = chunks + 1;
  RETURN NULL;
END $$;

CREATE TRIGGER chunks_vector_replaced AFTER UPDATE OF embedding ON chunks
  FOR EACH ROW WHEN (OLD.embedding IS NOT NULL AND NEW.embedding IS NOT NULL)
  EXECUTE FUNCTION engram_vector_replaced();
`
