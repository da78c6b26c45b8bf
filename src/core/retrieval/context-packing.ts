// Packing into the token budget: each section's cap, its items by score up to the cap (cut to
// fit where allowed), and items dropped until the rendered bundle fits `maxTokens`.
import type { EngineContext } from '../kernel/engine-context.ts'
import { estimateTokens } from '../kernel/tokens.ts'
import type { Candidate, ContextItem, ContextOmission, ContextSection } from './context-bundle.ts'
import {
  type ContextInput,
  DEFAULT_CONTEXT_BUDGET,
  DEFAULT_SECTION_CAPS,
  SECTION_NAMES,
  SECTION_PRIORITIES,
  type SectionName,
} from './context-input.ts'
import { render, SECTION_TITLES } from './context-render.ts'

/** Counts the tokens of a text as the model will: the engine's counter, or the estimate. */
export type CountTokens = (text: string) => number

/** Section names, highest priority first (ties in bundle order). */
const BY_PRIORITY = [...SECTION_NAMES].sort((a, b) => SECTION_PRIORITIES[b] - SECTION_PRIORITIES[a])
/** The order items are dropped from when the rendered bundle is over budget. */
const LOWEST_PRIORITY_FIRST = [...BY_PRIORITY].reverse()

/** The engine's token counter, or `estimateTokens` when it has none. */
export function tokenCounter(ctx: EngineContext): CountTokens {
  return ctx.tokenCounter ?? estimateTokens
}

/** Each section's cap: asked for or scaled with the budget, given highest priority first until the budget is spent. */
export function sectionCaps(i: ContextInput): Record<SectionName, number> {
  const scaled = Object.fromEntries(
    SECTION_NAMES.map((n) => [n, i.sections?.[n] ?? Math.floor((DEFAULT_SECTION_CAPS[n] * i.maxTokens) / DEFAULT_CONTEXT_BUDGET)]),
  ) as Record<SectionName, number>
  let left = i.maxTokens
  for (const n of BY_PRIORITY) {
    scaled[n] = Math.min(scaled[n], left)
    left -= scaled[n]
  }
  return scaled
}

/**
 * `text` cut to `max` tokens with its last line, `keep`, whole after the cut: a turn's answer
 * is shortened, never what it says of the documents it saw. Null when that does not fit.
 */
function keepingLast(text: string, keep: string | undefined, max: number, count: CountTokens): string | null {
  if (keep === undefined || !text.endsWith(`\n${keep}`)) return null
  const head = fitText(text.slice(0, -keep.length - 1), max - count(`\n${keep}`), count)
  if (head === null) return null
  const out = `${head}\n${keep}`
  return count(out) <= max ? out : null
}

/** The longest prefix of `text` (cut at a word where possible) that counts at most `max` tokens. */
function fitText(text: string, max: number, count: CountTokens): string | null {
  const marker = ' …[truncated]'
  if (max <= count(marker)) return null
  let lo = 0
  let hi = text.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (count(text.slice(0, mid) + marker) <= max) lo = mid
    else hi = mid - 1
  }
  if (lo === 0) return null
  const cut = text.slice(0, lo)
  const space = cut.lastIndexOf(' ')
  return (space > lo * 0.6 ? cut.slice(0, space) : cut) + marker
}

/** Packs candidates by score (ties by id) until the cap; one that is too long may be cut to fit. */
export function pack(count: CountTokens, name: SectionName, cap: number, candidates: Candidate[], omissions: ContextOmission[]): ContextSection {
  const header = `## ${SECTION_TITLES[name]}`
  const headerTokens = count(header)
  const sorted = [...candidates].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const items: ContextItem[] = []
  const bodies = new Map<string, string>()
  let used = 0
  for (const c of sorted) {
    if (c.body !== undefined) {
      const first = bodies.get(c.body)
      if (first !== undefined) {
        omissions.push({ id: c.id, reason: 'duplicate', detail: first })
        continue
      }
      bodies.set(c.body, c.id)
    }
    const room = cap - used - (items.length === 0 ? headerTokens : 0)
    let text = c.text
    let tokens = count(text)
    if (tokens > room && c.truncatable && room > 32) {
      const cut = keepingLast(text, c.keep, room, count) ?? fitText(text, room, count)
      if (cut !== null) {
        omissions.push({ id: c.id, reason: 'truncated_to_fit', detail: `${name}: ${tokens} → ${count(cut)} tokens` })
        text = cut
        tokens = count(cut)
      }
    }
    if (tokens > room) {
      omissions.push({ id: c.id, reason: 'over_section_cap', detail: name })
      continue
    }
    used += tokens + (items.length === 0 ? headerTokens : 0)
    items.push({ id: c.id, kind: c.kind, text, tokens, score: c.score, ...(c.explain ? { explain: c.explain } : {}), source: c.source })
  }
  return { name, capTokens: cap, usedTokens: used, items }
}

/**
 * Every section packed to its cap. The evidence is packed last: an event another section
 * holds (a standing decision, a task's state, a handoff note), or a decision the ledger left
 * out as superseded, is no evidence besides.
 */
export function packSections(
  count: CountTokens,
  cap: Record<SectionName, number>,
  candidatesBySection: Record<SectionName, Candidate[]>,
  omissions: ContextOmission[],
): ContextSection[] {
  const packed = new Map<SectionName, ContextSection>()
  for (const n of SECTION_NAMES) if (n !== 'retrieved_evidence') packed.set(n, pack(count, n, cap[n], candidatesBySection[n], omissions))
  const placed = new Set<unknown>([
    ...(['decision_ledger', 'task_state', 'handoff_packet'] as const).flatMap((n) => packed.get(n)?.items.map((it) => it.source.eventId) ?? []),
    ...omissions.filter((o) => o.reason === 'superseded').map((o) => o.id),
  ])
  const fresh = candidatesBySection.retrieved_evidence.filter((c) => !placed.has(c.source.eventId))
  packed.set('retrieved_evidence', pack(count, 'retrieved_evidence', cap.retrieved_evidence, fresh, omissions))
  return SECTION_NAMES.map((n) => packed.get(n) as ContextSection)
}

/**
 * The sections' text, within `maxTokens`. Section caps add up to at most the budget, but a
 * tokenizer need not be additive over joined text: drop items until the rendered text fits,
 * the lowest-scored of the lowest-priority section that has any.
 */
export function renderWithinBudget(count: CountTokens, sections: ContextSection[], maxTokens: number, omissions: ContextOmission[]): string {
  let text = render(sections)
  while (count(text) > maxTokens) {
    const s = LOWEST_PRIORITY_FIRST.map((n) => sections.find((x) => x.name === n) as ContextSection).find((x) => x.items.length > 0)
    if (!s) break
    let worst: { s: ContextSection; k: number } | undefined
    for (const [k, it] of s.items.entries()) {
      if (!worst || it.score < (worst.s.items[worst.k]?.score ?? Infinity)) worst = { s, k }
    }
    if (!worst) break
    const [dropped] = worst.s.items.splice(worst.k, 1)
    if (dropped) {
      worst.s.usedTokens -= dropped.tokens
      omissions.push({ id: dropped.id, reason: 'over_budget', detail: worst.s.name })
    }
    text = render(sections)
  }
  for (const s of sections) {
    if (s.items.length === 0) s.usedTokens = 0
  }
  return text
}
