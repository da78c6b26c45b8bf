/**
 * Indexes for reads that scanned every row.
 *
 * The context bundle's fast sections (open tasks, decisions, handoff notes) read a few kinds
 * of event out of every event; without an index each read scanned the whole log (the fast
 * path took 185 ms at 100,000 events, 6–8 ms with these; bench/HISTORY.md). Partial indexes
 * hold only those rows, so the write path pays nothing for the events that are none of them.
 */
export const scanIndexes = `
CREATE INDEX events_task_updates ON events (tenant_id, created_at) WHERE kind = 'task_update';
CREATE INDEX events_decisions ON events (tenant_id, created_at) WHERE kind = 'decision';
CREATE INDEX events_handoffs ON events (tenant_id, created_at) WHERE 'handoff' = ANY(tags);

-- The indexer looks for chunks whose vector is of another model (after a model change or an
-- import); chunks without a vector have their own index (chunks_unembedded).
CREATE INDEX chunks_embed_model ON chunks (embed_model, created_at) WHERE embedding IS NOT NULL;
`
