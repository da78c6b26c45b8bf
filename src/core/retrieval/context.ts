// `createContext`: the Active Context Bundle (`buildContext`) and past turns (`turns`). The
// bundle's parts live beside this file: its input (context-input.ts), its types
// (context-bundle.ts), each section's read (context-sections.ts), the evidence's search
// passes (context-evidence.ts), past turns (context-turns.ts), packing into the budget
// (context-packing.ts) and its text (context-render.ts).
import type { EngineContext } from '../kernel/engine-context.ts'
import { newId } from '../kernel/ids.ts'
import { identifier } from '../kernel/scope.ts'
import { toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { openingReads } from '../privacy/vault.ts'
import type { ContextBundle, ContextOmission } from './context-bundle.ts'
import { type Evidence, passLimits, planEvidence, retrieved } from './context-evidence.ts'
import { type BuildContextInput, type ContextInput, contextInput, type TurnsOptions, turnsOptions } from './context-input.ts'
import { packSections, renderWithinBudget, sectionCaps, tokenCounter } from './context-packing.ts'
import { readSections } from './context-sections.ts'
import { readTurns, type TurnView } from './context-turns.ts'

export type { ContextBundle, ContextItem, ContextOmission, ContextSection } from './context-bundle.ts'
export { DOCUMENT_FAN_OUT, DOCUMENT_LINK_SCORE, FIRST_PASS_TOKENS_PER_HIT, MAX_RETRIEVED, MIN_TOKENS_PER_HIT } from './context-evidence.ts'
export {
  type BuildContextInput,
  DEFAULT_CONTEXT_BUDGET,
  DEFAULT_SECTION_CAPS,
  MIN_CONTEXT_BUDGET,
  SECTION_NAMES,
  SECTION_PRIORITIES,
  type SectionName,
  type TurnsOptions,
} from './context-input.ts'
export { DECISION_NAMESPACES, IDENTITY_NAMESPACES, RULE_CATEGORIES, RULE_NAMESPACES } from './context-sections.ts'
export type { TurnView } from './context-turns.ts'

/** `buildContext`: the Active Context Bundle. */
export function createContext(ctx: EngineContext) {
  return {
    /**
     * The past turns that events belong to — for each search hit, the question, the answer,
     * the procedures of the answer and the document versions they saw, with how stale each
     * is now (or at `asOf`) — in the order asked, leaving out ids that are no event of the
     * tenant, or above what `channel` may show. An event recorded outside a turn comes back
     * with null question and answer.
     *
     * @example
     * const hits = await memory.search('why does login fail?')
     * const [turn] = await memory.turns(hits.map((h) => h.eventId))
     */
    async turns(eventIds: readonly string[], options: TurnsOptions = {}): Promise<TurnView[]> {
      const ids = parseInput(z.array(identifier).max(1000), eventIds, 'event ids')
      const o = parseInput(turnsOptions, options, 'turn options')
      if (ids.length === 0) return []
      return readTurns(ctx, ids, o)
    },

    /**
     * Builds the Active Context Bundle for the next model call: identity and rules (policy
     * memory and curated instructions, constraints, conventions), open tasks, decisions (not
     * superseded), evidence retrieved from other conversations (search, plus past turns that
     * touched the same documents) shown as question, procedures, answer and documents with
     * their staleness, the recent window of this conversation, and handoff notes. Each
     * section is packed by score up to its cap; the whole never exceeds `maxTokens` under the
     * engine's token counter; `maxTokens` is 64 at least (`INVALID_INPUT` below). Same memory
     * and input → same bundle (while the planner's statistics stay the same:
     * docs/retrieval-and-context.md).
     *
     * @example
     * const bundle = await memory.buildContext({ query: 'why does login fail?', conversationId: 'c9', maxTokens: 8000 })
     * prompt = bundle.text + '\n\n' + userMessage
     */
    async buildContext(input: BuildContextInput): Promise<ContextBundle> {
      const i = parseInput(contextInput, input, 'context request')
      const now = i.now === undefined ? ctx.now() : toDate(i.now)
      const omissions: ContextOmission[] = []
      const cap = sectionCaps(i)

      // The query is validated and embedded before any read; then every read runs in one
      // transaction: the sections come from one state of the memory, each statement is kept
      // prepared, and PGlite flushes its storage once, not after each.
      const limits = passLimits(cap.retrieved_evidence)
      const plan = i.retrieval ? await planEvidence(ctx, i, now, limits.first) : null
      const read = await ctx.db.transaction(async (sqlTx) => {
        // Sections cut and count their text: sealed text is opened as it is read.
        const tx = openingReads(ctx.vault, sqlTx)
        const sections = await readSections(tx, i, now, omissions)
        // Last: the search's settings hold for the rest of the transaction.
        const evidence = plan ? await retrieved(ctx, tx, i, now, plan, omissions, cap.retrieved_evidence, limits) : null
        return { sections, evidence }
      })
      const evidence = read.evidence ?? { candidates: [], poolSize: 0, scored: 0, searchLimit: 0, searchPasses: 0 }
      if (!i.retrieval) omissions.push({ reason: 'retrieval_skipped' })

      const count = tokenCounter(ctx)
      const sections = packSections(count, cap, { ...read.sections.candidates, retrieved_evidence: evidence.candidates }, omissions)
      const text = renderWithinBudget(count, sections, i.maxTokens, omissions)
      return {
        id: newId('bundle'),
        budgetTokens: i.maxTokens,
        tokenUsedEst: count(text),
        sections,
        omissions,
        provenance: provenance(ctx, i, read.sections.queryTerms, evidence),
        text,
      }
    },
  }
}

/** Why the bundle holds what it holds: the query's terms, the search's figures, the filters and weights. */
function provenance(ctx: EngineContext, i: ContextInput, queryTerms: string[], evidence: Evidence): ContextBundle['provenance'] {
  return {
    intent: i.intent ?? null,
    queryTerms,
    poolSize: evidence.poolSize,
    scored: evidence.scored,
    searchLimit: evidence.searchLimit,
    searchPasses: evidence.searchPasses,
    filters: {
      tenantId: i.tenantId,
      userId: i.userId ?? null,
      agentId: i.agentId ?? null,
      channel: i.channel,
      sensitivityAllowed: allowedSensitivities(i.channel),
      excludeConversation: i.conversationId ?? null,
    },
    weights: { ...ctx.scoring, importanceByKind: { ...ctx.scoring.importanceByKind } },
    tokenizer: ctx.tokenCounter ? 'custom' : 'estimateTokens',
  }
}
