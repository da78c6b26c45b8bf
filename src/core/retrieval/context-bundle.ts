// What `buildContext` returns, and the candidates each section's read hands to packing.
import type { StoredSensitivity } from '../kernel/scope.ts'
import type { SectionName } from './context-input.ts'
import type { SearchExplain } from './search.ts'

export interface ContextItem {
  id: string
  kind: string
  text: string
  tokens: number
  score: number
  explain?: SearchExplain
  source: Record<string, string | number | string[] | null>
}

export interface ContextSection {
  name: SectionName
  capTokens: number
  usedTokens: number
  items: ContextItem[]
}

export interface ContextOmission {
  id?: string
  reason: string
  detail?: string
}

/** The Active Context Bundle: what to put in front of the model, and why. */
export interface ContextBundle {
  /** This bundle's id (`acb_…`, sortable by time), to log or cite which context a step had. */
  id: string
  budgetTokens: number
  tokenUsedEst: number
  sections: ContextSection[]
  omissions: ContextOmission[]
  provenance: {
    intent: string | null
    queryTerms: string[]
    poolSize: number
    scored: number
    /** Hits search was asked for by the pass whose candidates were packed (0 without retrieval). */
    searchLimit: number
    /** Search passes run: 1, or 2 when the first left the evidence section short (0 without retrieval). */
    searchPasses: number
    filters: {
      tenantId: string
      userId: string | null
      agentId: string | null
      channel: string
      sensitivityAllowed: StoredSensitivity[]
      excludeConversation: string | null
    }
    weights: Record<string, unknown>
    tokenizer: string
  }
  text: string
}

/** A section's item before packing: what packing may cut, and what makes two the same. */
export interface Candidate {
  id: string
  kind: string
  text: string
  score: number
  explain?: SearchExplain
  source: ContextItem['source']
  /** Whether the text may be cut to fit the room left in its section. */
  truncatable?: boolean
  /** The text's last line, kept whole when the rest is cut (a turn's document staleness). */
  keep?: string
  /** Text that makes two candidates the same for the reader; the later one is left out. */
  body?: string
}
