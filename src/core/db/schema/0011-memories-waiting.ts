/**
 * The active memories that wait for a vector of the current model, found through indexes as
 * the chunks' are (`chunks_unembedded`, `chunks_embed_model`): those with no vector, and those
 * with a vector, by model and time. Without them every indexing batch, and every count of what
 * waits, read all memories (2.45 ms a batch at p50 with 10,000 memories and none waiting, 0.74
 * with them: docs/indexing-and-embeddings.md).
 */
export const memoriesWaiting = `
CREATE INDEX memories_unembedded ON memories (created_at) WHERE status = 'active' AND vector IS NULL;
CREATE INDEX memories_embed_model ON memories (embed_model, created_at) WHERE status = 'active' AND vector IS NOT NULL;
`
