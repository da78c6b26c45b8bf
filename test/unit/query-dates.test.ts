import { describe, expect, it } from 'vitest'
import { namedPeriod } from '../../src/core/query-dates.ts'

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
})
