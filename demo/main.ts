import { createMemory, MemoryError } from '../src/index.ts'

const status = document.querySelector<HTMLParagraphElement>('#status')!

try {
  const memory = await createMemory({ name: 'demo', storage: 'idb' })
  const ping = await memory.ping()
  status.textContent = `Memory ready: schema v${ping.schemaVersion}, Postgres ${ping.postgres}, pgvector ${ping.vector}.`
} catch (error) {
  status.textContent = MemoryError.is(error)
    ? `The memory could not start (${error.code}): ${error.message}`
    : `The memory could not start: ${String(error)}`
}
