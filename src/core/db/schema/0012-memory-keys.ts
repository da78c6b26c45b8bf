/**
 * Memory keys: a name a memory can be saved under (`remember({ key })`), so that saving again
 * under it replaces the memory it names, whatever the new text says. The active memory of a
 * key is found through one index range.
 */
export const memoryKeys = `
ALTER TABLE memories ADD COLUMN key text;
CREATE INDEX memories_key ON memories (tenant_id, key) WHERE key IS NOT NULL AND status = 'active';
`
