import { createArchives, restoreArchives } from './maintenance/archive.ts'
import { createHitLog } from './maintenance/hits.ts'
import { createChanges } from './retrieval/changes.ts'
import { createConversationGraph } from './retrieval/conversations.ts'
import { lazyCypher } from './cypher/lazy-cypher.ts'
import type { OpenGraphDatabase } from './cypher/age-graphs.ts'
import type { Backend, Db, Queryable } from './kernel/db.ts'
import { withPreparedStatements } from './db/prepared.ts'
import { createDocuments, type Observation } from './documents/documents.ts'
import { VectorCache } from './kernel/embedder.ts'
import { entityGraphApi } from './graph/entities.ts'
import { createEvents, type RecordResult } from './log/events.ts'
import { createForget } from './maintenance/forget.ts'
import { createGraph } from './graph/edges.ts'
import { createIndexer, parseIndexingPause } from './maintenance/indexer.ts'
import { createStatistics, MIN_REFRESH_ROWS } from './maintenance/planner-statistics.ts'
import { kvApi } from './kv/kv.ts'
import { memoriesApi } from './memories/memories.ts'
import { normalizePosixPath, normalizeWorkspace, type PathResolver, type Workspace } from './documents/paths.ts'
import { DEFAULT_DEDUP_THRESHOLD, DEFAULT_MEMORY_SETTINGS, type EngineSettingName, type MemorySettings } from './settings.ts'
import { rebuildMissingChunks } from './log/chunks.ts'
import { createFileFormat, createPortable } from './portable/portable.ts'
import { createSync } from './sync/sync.ts'
import { migrate } from './db/schema/migrations.ts'
import { createStats } from './maintenance/stats.ts'
import { createTelemetry, type Timing, telemetryApi } from './kernel/telemetry.ts'
import type { ToolIdentity } from './tools/agent-tools.ts'
import { callTool } from './tools/tool-calls.ts'
import { createTurns, type TurnRecord } from './turns/turns.ts'
import { parseWarmUp, rehearsalTurn } from './maintenance/warm-up.ts'
import { createSearch, type SearchHit } from './retrieval/search.ts'
import { ensureVectorIndex } from './db/vectors.ts'
import { type ContextBundle, createContext } from './retrieval/context.ts'
import { DEFAULT_SCORING, resolveScoring } from './kernel/scoring.ts'
import {
  noVault,
  openVault,
  sealStored,
  storeVaultRecord,
  type VaultInput,
  vaultInput,
  vaultLocked,
  type VaultRecord,
  type VaultStatus,
} from './privacy/vault.ts'
import { parseInput } from './kernel/validate.ts'
import { MemoryError } from './kernel/errors.ts'
import { type MethodRules, wrapMethods } from './methods.ts'
import type { EngineContext } from './kernel/engine-context.ts'
import { type InTurn, type WriteLock, writeTurns } from './kernel/write-turns.ts'
import { z } from 'zod'

export { DEFAULT_DEDUP_THRESHOLD }

/** What `createEngine` takes: the memory's settings, and the database it runs on. */
export interface EngineOptions extends Omit<MemorySettings, 'cacheMB'> {
  db: Db
  /**
   * Maps an absolute document path to the file it names before it becomes a key, e.g.
   * resolving symlinks (`openMemory` in Node does, unless `resolveSymlinks: false`), so a file
   * reached by two paths is one document. The local root is resolved the same way.
   */
  resolvePath?: PathResolver
  /**
   * Opens the separate database `cypher` keeps its graphs in: a PGlite with Apache AGE.
   * `openMemory` and the worker give one; without it, `cypher` fails with `NOT_SUPPORTED`.
   */
  graphDatabase?: OpenGraphDatabase
  /** What hosts `db` (default `pglite`); `openMemory({ postgres })` passes `postgres`. */
  backend?: Backend
  /**
   * The lock that processes writing the same database share (`openMemory({ postgres })` gives
   * a server's advisory lock): write calls and the migrations then run in turns (see
   * `writeTurns`). Without it, this engine is its database's only writer.
   */
  writeLock?: WriteLock
}

/** The engine's settings that are plain data (or a `CryptoKey`), so they can cross to a worker. */
export type EngineSettings = Pick<MemorySettings, EngineSettingName>

export interface PingResult {
  schemaVersion: number
  postgres: string
  vector: string
}

/** The options that are plain data; the functions, the database and the model are checked apart. */
const plainOptions = z
  .object({
    indexing: z.enum(['auto', 'manual']).optional(),
    backend: z.enum(['pglite', 'postgres']).optional(),
    statistics: z.enum(['auto', 'manual']).optional(),
    dedupThreshold: z.number().min(0).max(1).optional(),
    workspace: z
      .discriminatedUnion('mode', [
        z.object({ mode: z.literal('local'), root: z.string().min(1).max(4096) }).strict(),
        z.object({ mode: z.literal('global') }).strict(),
      ])
      .optional(),
  })
  .strict()

const hasMethods = (value: unknown, names: readonly string[]): boolean =>
  value !== null && typeof value === 'object' && names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** Refuses options a JavaScript caller got wrong with `INVALID_INPUT`, before anything opens. */
function checkOptions(options: EngineOptions): void {
  if (options === null || typeof options !== 'object') throw new MemoryError('INVALID_INPUT', 'The engine takes an options object.')
  // Parsed on their own below: scoring, vault, indexingPause.
  const { db, now, embedder, resolvePath, tokenCounter, graphDatabase, writeLock, scoring: _s, vault: _v, indexingPause: _p, ...plain } =
    options
  parseInput(plainOptions, plain, 'engine options')
  if (!hasMethods(db, ['query', 'exec', 'transaction'])) {
    throw new MemoryError('INVALID_INPUT', 'Invalid engine options at "db": a database with query, exec and transaction is required.')
  }
  if (writeLock !== undefined && !hasMethods(writeLock, ['acquire', 'release'])) {
    throw new MemoryError('INVALID_INPUT', 'Invalid engine options at "writeLock": a lock with acquire and release is required.')
  }
  for (const [name, value] of Object.entries({ now, resolvePath, tokenCounter, graphDatabase })) {
    if (value !== undefined && typeof value !== 'function') {
      throw new MemoryError('INVALID_INPUT', `Invalid engine options at "${name}": a function is required.`)
    }
  }
  if (embedder !== undefined && !(embedder instanceof Promise) && !hasMethods(embedder, ['embed'])) {
    throw new MemoryError('INVALID_INPUT', 'Invalid engine options at "embedder": an Embedder (or a promise of one) is required.')
  }
}

/** A timing whose result type is checked where it is written (a `Timing<never>` takes any). */
const timing = <R>(t: Timing<R>): Timing<never> => t

/**
 * What the engine adds around its public methods, in one place (see `wrapMethods`). Every
 * method's errors become `MemoryError`s, every call is noted as running, and every result is
 * opened by the vault; these add the rest.
 */
const ENGINE_RULES: MethodRules = {
  // Writes and the rows each changes, for the planner statistics. A turn is a few events with
  // their chunks and edges; an import can replace everything; archiving and sync report their
  // own rows.
  writes: {
    record: 1,
    recordTurn: 4,
    observeDocument: 2,
    forget: MIN_REFRESH_ROWS,
    importFile: Number.MAX_SAFE_INTEGER,
    remember: 1,
    'memories.update': 1,
    'archives.create': 0,
    'archives.restore': 0,
    sync: 0,
    'syncServer.push': 0,
  },
  // The main writes and reads, reported to telemetry listeners.
  timings: {
    record: timing<RecordResult>({ op: 'write', entityType: 'event', describe: (r) => ({ id: r.eventId, detail: { chunks: r.chunkIds.length } }) }),
    recordTurn: timing<TurnRecord>({
      op: 'write',
      entityType: 'event',
      describe: (r) => ({ id: r.userEventId, detail: { procedures: r.procedures.length, chunks: r.chunkIds.length } }),
    }),
    observeDocument: timing<Observation>({
      op: 'write',
      entityType: 'document',
      describe: (r) => ({ id: r.documentId, detail: { created: r.created } }),
    }),
    search: timing<SearchHit[]>({ op: 'query', entityType: 'event', describe: (hits) => ({ detail: { hits: hits.length } }) }),
    buildContext: timing<ContextBundle>({
      op: 'query',
      entityType: 'context',
      describe: (b) => ({ detail: { tokens: b.tokenUsedEst, items: b.sections.reduce((n, x) => n + x.items.length, 0) } }),
    }),
  },
  // Listeners return their unsubscribe at once; stopping and tool calls throw what they meet.
  plain: ['telemetry.subscribe', 'onIndexProgress', 'onError', 'stopIndexing', 'callTool'],
  // A change list moves the clock past its own end, and so do a sync and a server's pull. A
  // Cypher query writes nothing, and a rehearsal rolls back what it writes (while it waits for
  // a quiet moment, it would hold every change list back), so a change list need not wait.
  untracked: ['diffSince', 'cypher', 'sync', 'syncServer.pull', 'warmUp'],
  // Reads take no write turn. Indexing writes vectors only, as background indexing does, which
  // takes none either. A change list and a Cypher catch-up cut the clock, so they take one.
  reads: [
    'ping', 'indexing', 'waitForIndex', 'indexNow', 'rebuildIndex', 'embed', 'refreshStatistics', 'workspace',
    'events.get', 'events.list', 'events.supersededBy', 'artifacts.get',
    'documents.get', 'documents.history', 'documents.interactions', 'documents.version', 'documents.signals', 'documents.stalenessOf',
    'stats', 'exportFile', 'search', 'turns', 'buildContext', 'recall',
    'memories.get', 'memories.list', 'memories.search', 'memories.history', 'memories.contexts',
    'kv.get', 'kv.list', 'kv.namespaces', 'kv.history', 'archives.candidates', 'archives.list',
    'graph.getNode', 'graph.nodeHistory', 'graph.nodes', 'graph.neighbors', 'graph.relations', 'graph.verify',
    'graph.out', 'graph.in', 'graph.walk', 'graph.conversation', 'vault.status', 'vault.check',
    'devices.list',
  ],
}

/**
 * Builds the engine over a database, migrating it first. The returned object is the whole
 * API: the worker exposes it through comlink, Node calls it in-process, and the client's
 * types are derived from it. Several engines may share one database (e.g. the same project
 * opened from two roots); each keeps its own workspace.
 *
 * @example
 * const memory = await createEngine({ db: pg, workspace: { mode: 'local', root: '/work/app' } })
 */
export async function createEngine(options: EngineOptions) {
  checkOptions(options)
  const clock = options.now ?? (() => new Date())
  // The engine's clock never runs back: a system clock stepped back (a time sync, a manual
  // change) reads as the latest time it gave until it catches up, so no row is dated before
  // one it follows (an edge ended before it began, a revision before its predecessor). A change
  // list cut at now (`diffSince`) moves it one millisecond past the cut, so no write lands in
  // a list already handed out.
  let floor = Number.NEGATIVE_INFINITY
  // The engine calls running, each with the latest time the clock had given when it began
  // (`earliestCall`): what the call writes is dated then or later. Noting it reads no clock,
  // so a clock that steps at each reading steps as before.
  const running = new Map<symbol, number>()
  let first: number | null = null
  const now = () => {
    const t = clock()
    first ??= t.getTime()
    if (t.getTime() >= floor) {
      floor = t.getTime()
      return t
    }
    return new Date(floor)
  }
  const ctx: EngineContext = {
    db: withPreparedStatements(options.db),
    backend: options.backend ?? 'pglite',
    now,
    cutAt: (at) => {
      floor = Math.max(floor, at.getTime() + 1)
    },
    earliestCall: () => {
      let earliest: number | null = null
      for (const at of running.values()) if (earliest === null || at < earliest) earliest = at
      // A call begun before the clock was first read dates what it writes at that reading or later.
      return earliest === Number.NEGATIVE_INFINITY ? first : earliest
    },
    // A loading embedder is installed here by the indexer once it resolves.
    embedder: options.embedder instanceof Promise ? null : (options.embedder ?? null),
    embedderLoading: options.embedder instanceof Promise,
    dedupThreshold: options.dedupThreshold ?? DEFAULT_MEMORY_SETTINGS.dedupThreshold,
    telemetry: createTelemetry(now),
    workspace: resolvedWorkspace(normalizeWorkspace(options.workspace ?? DEFAULT_MEMORY_SETTINGS.workspace), options.resolvePath),
    resolvePath: options.resolvePath,
    vectors: new VectorCache(),
    scoring: resolveScoring(DEFAULT_SCORING, options.scoring),
    tokenCounter: options.tokenCounter ?? null,
    wrote: () => {},
    changed: () => {},
    beforeRead: () => Promise.resolve(),
    hits: createHitLog(options.db, { onError: (cause) => reportHitsError(cause) }),
    vault: noVault(),
  }
  const vaultKey = options.vault === undefined ? undefined : parseInput(vaultInput, options.vault, 'vault')
  // A failed background write of the retrieval hits is reported to `onError` listeners.
  let reportHitsError = (_cause: unknown): void => {}
  // Background indexing and the statistics refresh wait for the same pause in the writes.
  const pause = parseIndexingPause(options.indexingPause)
  // Where several processes write the database, write calls take turns, and so does the open.
  const inTurn: InTurn = options.writeLock
    ? writeTurns(options.writeLock, {
        raise: (at) => {
          floor = Math.max(floor, at)
        },
        latest: () => (Number.isFinite(floor) ? floor : null),
      })
    : (fn) => fn()
  const { schemaVersion, makingVault } = await inTurn(async () => {
    const schemaVersion = await migrate(ctx.db)
    // A vault made now is made below, with the sealing and the archives it needs, in one
    // transaction, once the file format that restores archives exists.
    const makingVault = vaultKey !== undefined && (await openVault(ctx.db, undefined)).status === 'none'
    if (!makingVault) {
      ctx.vault = await openVault(ctx.db, vaultKey)
      // Rows stored plain before the vault was given are sealed now, all in one transaction.
      if (ctx.vault.status === 'open') await ctx.db.transaction((tx) => sealStored(tx, ctx.vault))
    }
    if (ctx.embedder) await ensureVectorIndex(ctx.db, ctx.embedder.dims)
    return { schemaVersion, makingVault }
  })
  // A failed background refresh only leaves older statistics (the next writes retry it); it is
  // reported to `onError` listeners.
  let reportStatisticsError = (_cause: unknown): void => {}
  const statistics = createStatistics(ctx.db, {
    mode: options.statistics ?? DEFAULT_MEMORY_SETTINGS.statistics,
    onError: (cause) => reportStatisticsError(cause),
    pause,
    backend: ctx.backend,
  })
  await statistics.start(ctx.embedder?.id ?? null)
  ctx.changed = statistics.changed
  ctx.beforeRead = statistics.beforeRead
  const indexer = createIndexer(ctx, { embedder: options.embedder, mode: options.indexing ?? DEFAULT_MEMORY_SETTINGS.indexing, pause })
  reportStatisticsError = (cause) => indexer.report(cause, 'Refreshing the planner statistics failed')
  reportHitsError = (cause) => indexer.report(cause, 'Writing the retrieval hits failed')
  // A model that loads after the open: are the statistics as far from the chunks with its vectors?
  if (options.embedder instanceof Promise) {
    // A model that fails to load is reported by the indexer.
    options.embedder.then(
      (embedder) => statistics.checkModel(embedder.id).catch((cause: unknown) => reportStatisticsError(cause)),
      () => {},
    )
  }
  ctx.wrote = indexer.nudge
  // Writes since the open: a rehearsal stops once the memory is written to.
  let writes = 0
  const curated = memoriesApi(ctx)
  const turns = createTurns(ctx)
  // Rows a file or an archive brings in are sealed before their chunks are cut.
  const fileFormat = createFileFormat(ctx, schemaVersion, async (tx, eventIds) => {
    await sealStored(tx, ctx.vault)
    return rebuildMissingChunks(tx, eventIds)
  })
  /**
   * A vault made now finds the archives made without one holding `high` rows plain in their
   * files: each is restored (its rows sealed as they come back), in the caller's transaction.
   */
  const restoreUnsealedArchives = async (tx: Queryable): Promise<void> => {
    const { rows } = await tx.query<{ id: string }>('SELECT id FROM archives ORDER BY id')
    // One nothing can read stays as it is (it holds nothing that could be read plain).
    if (rows.length > 0) await restoreArchives(tx, fileFormat, rows.map((r) => r.id), null, 'keep')
  }
  /**
   * Makes the vault (with a new data key, or the one `joined` wraps: another memory's, which
   * `key` must open), seals what is stored plain and restores the archives, all or nothing.
   */
  const makeVault = async (key: VaultInput, joined?: VaultRecord): Promise<void> => {
    const before = ctx.vault
    try {
      await ctx.db.transaction(async (tx) => {
        if (joined) await storeVaultRecord(tx, joined)
        const vault = await openVault(tx, key)
        await sealStored(tx, vault)
        // The archives' rows are sealed as they come back, by this vault.
        ctx.vault = vault
        await restoreUnsealedArchives(tx)
      })
    } catch (error) {
      ctx.vault = before
      throw error
    }
  }
  if (makingVault && vaultKey) await inTurn(() => makeVault(vaultKey))
  const events = createEvents(ctx)
  const documents = createDocuments(ctx)
  const portable = createPortable(ctx, fileFormat)
  const forgetting = createForget(ctx, fileFormat)
  const syncing = createSync(ctx, schemaVersion, {
    replayForget: (tx, target, upTo) => forgetting.replay(tx, target, upTo),
    rebuild: (tx, eventIds) => fileFormat.rebuild(tx, eventIds),
    changed: (rows) => ctx.changed(rows),
    joinVault: (record, key) => makeVault(key, record),
  })
  const retrieval = { ...createSearch(ctx), ...createContext(ctx) }
  const conversationGraph = { ...createGraph(ctx), ...createConversationGraph(ctx) }
  const indexing = indexer.api
  const cypher = lazyCypher(ctx, options.graphDatabase)

  // Every public method, by its own name. `wrapMethods` adds what each needs, from ENGINE_RULES.
  // The features' methods close over the context and never use `this`.
  /* eslint-disable @typescript-eslint/unbound-method */
  const methods = {
    /** Proves the database is up: versions of the schema, Postgres and pgvector. */
    async ping(): Promise<PingResult> {
      const { rows } = await ctx.db.query<{ pg: string; vec: string }>(
        `SELECT current_setting('server_version') AS pg,
                (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec`,
      )
      const row = rows[0]
      return { schemaVersion, postgres: row?.pg ?? '', vector: row?.vec ?? '' }
    },
    indexing: indexing.indexing,
    waitForIndex: indexing.waitForIndex,
    indexNow: indexing.indexNow,
    rebuildIndex: indexing.rebuildIndex,
    embed: indexing.embed,
    /**
     * Refreshes the query planner's statistics now (one `ANALYZE`) and waits for it. The
     * engine does this by itself after enough writes; call it after a bulk load when the
     * next reads must be fast at once.
     */
    refreshStatistics(): Promise<void> {
      return statistics.refresh()
    },
    /** The workspace this engine resolves document paths in. */
    workspace(): Promise<Workspace> {
      return Promise.resolve({ ...ctx.workspace })
    },
    record: events.record,
    events: events.events,
    artifacts: events.artifacts,
    recordTurn: turns.recordTurn,
    observeDocument: documents.observeDocument,
    documents: documents.documents,
    forget: forgetting.forget,
    diffSince: createChanges(ctx).diffSince,
    stats: createStats(ctx, () => indexer.counts()).stats,
    exportFile: portable.exportFile,
    importFile: portable.importFile,
    search: retrieval.search,
    turns: retrieval.turns,
    buildContext: retrieval.buildContext,
    /**
     * Rehearses `turns` turns (default 20) and rolls each back: nothing is stored, no event,
     * document or statistic changes (only the sequences that number events move on). Run in
     * an idle moment after opening, so that the first real turns do not pay for the database
     * warming up — the WASM engine compiling Postgres' hot code with its optimizing tier, the
     * statements being prepared and their pages read in. The worker does this by itself
     * (`createMemory({ warmUp })`). It stops early once the memory is written to: real writes
     * warm it as well, and each waits for at most one rehearsal; or when `signal` aborts.
     * `beforeEach` is awaited before each rehearsal. Returns the turns rehearsed and the time
     * they took (not counting `beforeEach`).
     *
     * @example
     * await memory.warmUp({ turns: 20 }) // → { turns: 20, ms: 740 }
     */
    async warmUp(options?: {
      turns?: number
      signal?: AbortSignal
      beforeEach?: () => Promise<void>
    }): Promise<{ turns: number; ms: number }> {
      const { turns: count, signal, beforeEach } = parseWarmUp(options)
      const before = writes
      let n = 0
      let ms = 0
      const going = () => n < count && writes === before && !signal?.aborted
      while (going()) {
        await beforeEach?.()
        if (!going()) break
        const started = performance.now()
        await turns.rehearseTurn(rehearsalTurn(n))
        ms += performance.now() - started
        n++
      }
      return { turns: n, ms }
    },
    remember: curated.remember,
    recall: curated.recall,
    memories: curated.memories,
    kv: kvApi(ctx),
    archives: createArchives(ctx, fileFormat, ctx.hits),
    sync: syncing.sync,
    devices: syncing.devices,
    syncServer: syncing.syncServer,
    // The entity graph, and the conversation graph's edges and views.
    graph: { ...entityGraphApi(ctx), ...conversationGraph },
    cypher: cypher.cypher,
    telemetry: telemetryApi(ctx.telemetry),
    onIndexProgress: indexing.onIndexProgress,
    onError: indexing.onError,
    /**
     * Stops background work (indexing, statistics) and waits for what is in flight, writes the
     * retrieval hits noted since the last write of them, and closes the Cypher graphs' database;
     * call before closing the database.
     */
    async stopIndexing(): Promise<void> {
      await Promise.all([indexer.stop(), statistics.stop(), cypher.close()])
      try {
        await ctx.hits.stop()
      } catch (cause) {
        // Hits only keep conversations out of archives; losing some is reported, not thrown.
        reportHitsError(cause)
      }
    },
    /**
     * Runs an agent's tool call (see `openAITools()` / `anthropicTools()`) for `identity`.
     *
     * @example
     * await memory.callTool('save_memory', { content: 'User prefers tabs', category: 'preference' })
     */
    callTool(name: string, args: unknown, identity?: ToolIdentity): Promise<unknown> {
      return callTool(api, name, args, identity)
    },
    vault: {
      /**
       * `none` (no vault: `high` is stored plain), `open` (sealed at rest, read plain) or
       * `locked` (this memory has a vault but was opened without its key).
       */
      status(): Promise<VaultStatus> {
        return Promise.resolve(ctx.vault.status)
      },
      /**
       * Sets the vault key: on a memory without a vault, makes one and seals the `high` rows
       * already stored (as opening with `vault` does); on an open one, wraps its data key under
       * the new passphrase or key, so the old one no longer opens it (nothing sealed changes).
       * `VAULT_LOCKED` on a locked memory: open it with its key first.
       *
       * @example
       * await memory.vault.setKey({ passphrase: 'a new long passphrase' })
       */
      async setKey(input: VaultInput): Promise<VaultStatus> {
        const key = parseInput(vaultInput, input, 'vault')
        if (ctx.vault.status === 'locked') throw vaultLocked('its key cannot be changed')
        if (ctx.vault.status === 'open') {
          const vault = ctx.vault
          await ctx.db.transaction((tx) => vault.rewrap(tx, key))
        } else await makeVault(key)
        return ctx.vault.status
      },
      /**
       * Checks a key against this memory's vault and changes nothing: the vault's status here
       * when the key fits it (`none`: the memory has no vault), `WRONG_PASSPHRASE` when not. A
       * tab that follows another's memory checks its key this way.
       *
       * @example
       * await memory.vault.check({ passphrase }) // 'open', or WRONG_PASSPHRASE
       */
      async check(input: VaultInput): Promise<VaultStatus> {
        const key = parseInput(vaultInput, input, 'vault')
        const { rows } = await ctx.db.query('SELECT 1 FROM vault LIMIT 1')
        if (rows.length === 0) return 'none'
        // With a vault stored, opening it only reads.
        await openVault(ctx.db, key)
        return ctx.vault.status
      },
    },
  }
  /* eslint-enable @typescript-eslint/unbound-method */
  const api = wrapMethods(methods, ENGINE_RULES, {
    wrote: (rows) => {
      writes++
      indexer.nudge()
      cypher.nudge()
      statistics.changed(rows)
    },
    telemetry: ctx.telemetry,
    begin: () => {
      const token = Symbol('call')
      running.set(token, floor)
      return () => running.delete(token)
    },
    vault: () => ctx.vault,
    ...(options.writeLock ? { inTurn } : {}),
  })
  return api
}

export type Engine = Awaited<ReturnType<typeof createEngine>>

/** A local workspace's root as `resolvePath` resolves it, so resolved paths fall under it. */
function resolvedWorkspace(workspace: Workspace, resolvePath: PathResolver | undefined): Workspace {
  if (workspace.mode !== 'local' || !resolvePath) return workspace
  return { mode: 'local', root: normalizePosixPath(resolvePath(workspace.root)) }
}
