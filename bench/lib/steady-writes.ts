// Background indexing under a steady stream of writes, with the bundled model (Node, CPU):
// `bench/sustained-writes.ts` on the command line, and `remember_ms` in `npm run bench`.
// A memory of `events` events waits for its vectors; then four callers (record, recordTurn,
// remember, search) write at `rate` calls per second in all for `seconds`.
import { cp, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTransformersEmbedder as createInProcessEmbedder } from '../../src/embed/transformers-embedder.ts'
import { createTransformersEmbedder, type Embedder, openMemory } from '../../src/node/index.ts'
import { BENCH_SCOPE, makeQueries, makeTurns, seededRandom, sentence, sessionShape } from './data.ts'

export interface SteadyWritesOptions {
  events: number
  seconds: number
  rate: number
  /** Seconds between backlog readings. */
  every: number
  /** Index nothing during the load: the calls' latencies with the model idle. */
  manual: boolean
  /**
   * Index on the model's one session in this thread, as a browser's embedding worker does,
   * instead of Node's background thread: the peer `remember_ms` is measured against.
   */
  oneSession?: boolean
  /** Where the seeded memory is kept, and copied from for each run, so runs start alike. */
  seedDir?: string
  log: (line: string) => void
}

export interface SteadyWritesResult {
  seconds: number
  /** Chunks and memories waiting for a vector, every `every` seconds from the start. */
  backlog: number[]
  vectorsWritten: number
  /** Texts per second for the model alone, before and after the load. */
  modelAlone: [number, number]
  /** Milliseconds of each call, by kind. */
  times: Record<'record' | 'recordTurn' | 'remember' | 'search', number[]>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

export async function runSteadyWrites(o: SteadyWritesOptions): Promise<SteadyWritesResult> {
  const embedder = await (o.oneSession ? createInProcessEmbedder() : createTransformersEmbedder())
  const shape = sessionShape(o.events)
  const workspace = { mode: 'local', root: '/bench/repo' } as const
  const seedDir = o.seedDir ?? join(tmpdir(), `engram-load-seed-${o.events}`)
  await seed(seedDir, shape, embedder, workspace, o.log)
  const dataDir = await mkdtemp(join(tmpdir(), 'engram-load-'))
  await cp(seedDir, dataDir, { recursive: true })

  /** Texts per second for the model alone, on `texts`, in its own batches. */
  const modelRate = async (texts: string[]) => {
    const started = performance.now()
    await embedder.embed(texts)
    return texts.length / ((performance.now() - started) / 1000)
  }
  // Texts like those the indexer embeds first (the oldest turns' messages), to time the model alone.
  const sample = makeTurns(shape, 42, 0, 48)
    .flatMap((t) => [t.user, t.agent])
    .map((m) => (typeof m === 'string' ? m : m.text))
  await embedder.embed(sample.slice(0, 8))
  const aloneBefore = await modelRate(sample)

  const memory = await openMemory({ dataDir, embedder, workspace, ...(o.manual ? { indexing: 'manual' as const } : {}) })
  const first = await memory.indexing()
  o.log(`memory: ${o.events} events, ${first.pending} rows waiting for vectors; model alone: ${aloneBefore.toFixed(1)} texts/s`)

  const r = seededRandom(7)
  const turns = makeTurns(shape, 43, shape.turns, Math.ceil(o.rate * o.seconds))
  const queries = makeQueries(1000, 11)
  const times: SteadyWritesResult['times'] = { record: [], recordTurn: [], remember: [], search: [] }
  let n = 0
  const calls: Record<keyof SteadyWritesResult['times'], () => Promise<unknown>> = {
    record: () =>
      memory.record({
        kind: 'message',
        scope: { ...BENCH_SCOPE, conversationId: 'load' },
        actor: { type: 'human', id: BENCH_SCOPE.userId },
        content: { text: sentence(r, 30) },
      }),
    recordTurn: () => memory.recordTurn(turns[n++ % turns.length]!),
    remember: () => memory.remember({ content: `The user said ${sentence(r, 12)}`, category: 'fact', userId: BENCH_SCOPE.userId }),
    search: () => memory.search(queries[Math.floor(r() * queries.length)]!, { scope: { userId: BENCH_SCOPE.userId }, limit: 10 }),
  }

  // One caller per kind, each on a fixed schedule of rate/4 calls per second: a late call
  // starts at once, and the schedule does not move.
  const started = performance.now()
  const end = started + o.seconds * 1000
  const kinds = Object.keys(calls) as (keyof typeof calls)[]
  const callers = kinds.map(async (kind, k) => {
    const gap = (1000 * kinds.length) / o.rate
    for (let i = 0; ; i++) {
      const at = started + (k * gap) / 4 + i * gap
      if (at >= end) return
      await sleep(at - performance.now())
      const t = performance.now()
      await calls[kind]()
      times[kind].push(performance.now() - t)
    }
  })
  const backlog = [first.pending]
  const reporter = (async () => {
    for (let s = o.every; s <= o.seconds; s += o.every) {
      await sleep(started + s * 1000 - performance.now())
      const status = await memory.indexing()
      backlog.push(status.pending)
      o.log(`  ${s} s: ${status.pending} waiting, ${status.done} with a vector`)
    }
  })()
  await Promise.all([...callers, reporter])
  const elapsed = (performance.now() - started) / 1000
  const last = await memory.indexing()
  await memory.close()
  const aloneAfter = await modelRate(sample)
  await embedder.dispose()
  await rm(dataDir, { recursive: true, force: true })
  return { seconds: elapsed, backlog, vectorsWritten: last.done - first.done, modelAlone: [aloneBefore, aloneAfter], times }
}

/** The seeded memory: events only, no vectors (indexing is manual while it is written). */
async function seed(
  seedDir: string,
  shape: ReturnType<typeof sessionShape>,
  embedder: Embedder,
  workspace: { mode: 'local'; root: string },
  log: (line: string) => void,
): Promise<void> {
  if (await stat(join(seedDir, 'PG_VERSION')).catch(() => undefined)) return
  await rm(seedDir, { recursive: true, force: true })
  const seeding = await openMemory({ dataDir: seedDir, embedder, indexing: 'manual', workspace })
  const started = performance.now()
  for (const turn of makeTurns(shape, 42)) await seeding.recordTurn(turn)
  log(`seeded ${shape.turns * 4} events in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  await seeding.close()
}
