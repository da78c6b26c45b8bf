import { describe, expect, it } from 'vitest'
import { namedPeriod } from '../../src/core/retrieval/query-dates.ts'

const day = (iso: string) => new Date(`${iso}T00:00:00Z`)

describe('namedPeriod', () => {
  it('reads a named day in the common English and ISO forms, a day of slack either side', () => {
    for (const q of [
      'What did Ann say on 3 June 2023?',
      'on 3rd of June, 2023',
      'on June 3, 2023',
      'on Jun. 3 2023',
      'on June 3,2023',
      'notes from 2023-06-03',
    ]) {
      expect(namedPeriod(q), q).toEqual({ from: day('2023-06-02'), to: day('2023-06-05') })
    }
  })

  it('reads a named month, and spans every date a query names', () => {
    expect(namedPeriod('what happened in December 2023')).toEqual({ from: day('2023-11-30'), to: day('2024-01-02') })
    expect(namedPeriod('between May 2023 and June 5, 2024')).toEqual({ from: day('2023-04-30'), to: day('2024-06-07') })
  })

  it('names nothing without a full date, and ignores impossible ones', () => {
    for (const q of ['in May', 'what happened in 2023', 'the 3rd of June', 'on 2023-13-40', 'in June 1066', '']) {
      expect(namedPeriod(q), q).toBeNull()
    }
    // An impossible day leaves its month.
    expect(namedPeriod('on 31 February 2023')).toEqual({ from: day('2023-01-31'), to: day('2023-03-02') })
  })

  it('reads days and stretches relative to the clock, only when given one', () => {
    const now = new Date('2025-03-10T15:00:00Z')
    expect(namedPeriod('what did we decide yesterday?', now)).toEqual({ from: day('2025-03-08'), to: day('2025-03-11') })
    expect(namedPeriod('notes from today', now)).toEqual({ from: day('2025-03-09'), to: day('2025-03-12') })
    expect(namedPeriod('the bug from 3 days ago', now)).toEqual({ from: day('2025-03-06'), to: day('2025-03-09') })
    expect(namedPeriod('what Bo said two weeks ago', now)).toEqual({ from: day('2025-02-23'), to: day('2025-02-26') })
    expect(namedPeriod('what changed this week', now)).toEqual({ from: day('2025-03-02'), to: day('2025-03-12') })
    expect(namedPeriod('the plan from last week', now)).toEqual({ from: day('2025-02-23'), to: day('2025-03-12') })
    expect(namedPeriod('what we shipped last month', now)).toEqual({ from: day('2025-01-06'), to: day('2025-03-12') })
    // Relative and absolute dates span together; a weekend is not a week.
    expect(namedPeriod('yesterday and on 1 March 2025', now)).toEqual({ from: day('2025-02-28'), to: day('2025-03-11') })
    expect(namedPeriod('last weekend', now)).toBeNull()
    expect(namedPeriod('what did we decide yesterday?')).toBeNull()
  })

  it('names no time before the year 1 or after 9999, the times a memory may hold', () => {
    const first = new Date('0001-01-01T00:00:00.000Z')
    expect(namedPeriod('notes from today', first)).toEqual({ from: first, to: new Date('0001-01-03T00:00:00.000Z') })
    const last = new Date('9999-12-31T12:00:00.000Z')
    expect(namedPeriod('notes from today', last)).toEqual({ from: new Date('9999-12-30T00:00:00.000Z'), to: new Date('9999-12-31T23:59:59.999Z') })
  })
})
