/**
 * When a memory context's description or priority last changed (`memories.defineContext`), so
 * that a sync keeps the later change; null until the first change.
 */
export const contextChanges = `
ALTER TABLE memory_contexts ADD COLUMN updated_at timestamptz;
`
