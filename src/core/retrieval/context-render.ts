// The bundle's text: section titles, dates as rendered, and the sections joined in order.
import { iso } from '../kernel/time.ts'
import type { ContextSection } from './context-bundle.ts'
import type { SectionName } from './context-input.ts'

/** Each section's heading in the bundle's text. */
export const SECTION_TITLES: Record<SectionName, string> = {
  identity: 'Identity',
  rules: 'Rules',
  task_state: 'Task state',
  decision_ledger: 'Decisions',
  retrieved_evidence: 'Retrieved evidence',
  recent_window: 'Recent conversation',
  handoff_packet: 'Handoff',
}

/** A date as the bundle shows it: its day, `YYYY-MM-DD`. */
export function day(at: Date | string): string {
  return iso(at).slice(0, 10)
}

/** The sections that hold items, each under its title; the recent window oldest first. */
export function render(sections: ContextSection[]): string {
  return sections
    .filter((s) => s.items.length > 0)
    .map((s) => {
      const chronological = s.name === 'recent_window' ? [...s.items].reverse() : s.items
      return `## ${SECTION_TITLES[s.name]}\n${chronological.map((it) => it.text).join('\n\n')}`
    })
    .join('\n\n')
}
