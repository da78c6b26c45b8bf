/**
 * Memories that expire (`remember({ expiresAt })`): past that time a memory leaves recall,
 * search, listing and the context's standing memories, and stays readable by id with its
 * history. The expiring ones are found through one index range.
 */
export const memoryExpiry = `
ALTER TABLE memories ADD COLUMN expires_at timestamptz;
CREATE INDEX memories_expiring ON memories (tenant_id, expires_at) WHERE expires_at IS NOT NULL AND status = 'active';
`
