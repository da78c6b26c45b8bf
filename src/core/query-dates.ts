/**
 * Dates a search query names in words ("on 3 June 2023", "June 3, 2023", "in May 2023",
 * "2023-06-03", and relative to the search's clock "today", "yesterday", "3 days ago", "last
 * week", "this month"), as one period of time. Search ranks events from that period higher: a
 * question that names a day is mostly about what was said that day.
 */

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] as const
const MONTH = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)'
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?'
const YEAR = '(\\d{4})'
const SEP = '(?:,\\s*|\\s+)'

const PATTERNS: { re: RegExp; parts: (m: RegExpExecArray) => [string, string, string | undefined] }[] = [
  // 2023-06-03
  { re: /\b(\d{4})-(\d{2})-(\d{2})\b/g, parts: (m) => [m[1]!, String(Number(m[2]) - 1), m[3]] },
  // 3 June 2023, 3rd of June, 2023
  { re: new RegExp(`\\b${DAY}\\s+(?:of\\s+)?${MONTH}\\.?${SEP}${YEAR}\\b`, 'gi'), parts: (m) => [m[3]!, month(m[2]!), m[1]] },
  // June 3, 2023
  { re: new RegExp(`\\b${MONTH}\\.?\\s+${DAY}${SEP}${YEAR}\\b`, 'gi'), parts: (m) => [m[3]!, month(m[1]!), m[2]] },
  // June 2023
  { re: new RegExp(`\\b${MONTH}\\.?${SEP}${YEAR}\\b`, 'gi'), parts: (m) => [m[2]!, month(m[1]!), undefined] },
]

function month(name: string): string {
  return String(MONTHS.indexOf(name.slice(0, 3).toLowerCase() as (typeof MONTHS)[number]))
}

const DAY_MS = 86_400_000
/** Slack either side of a named period, so a day named in any time zone covers its events. */
const SLACK_MS = DAY_MS
const NUMBER_WORDS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7 }

/** Periods relative to `now` (UTC days): [start, end) in ms since the epoch. */
const RELATIVE: { re: RegExp; period: (m: RegExpExecArray, today: number) => [number, number] }[] = [
  { re: /\btoday\b/gi, period: (_, t) => [t, t + DAY_MS] },
  { re: /\byesterday\b/gi, period: (_, t) => [t - DAY_MS, t] },
  {
    re: /\b(\d{1,3}|an?|one|two|three|four|five|six|seven)\s+(day|week)s?\s+ago\b/gi,
    period: (m, t) => {
      const n = NUMBER_WORDS[m[1]!.toLowerCase()] ?? Number(m[1])
      const back = n * (m[2]!.toLowerCase() === 'week' ? 7 : 1) * DAY_MS
      return [t - back, t - back + DAY_MS]
    },
  },
  { re: /\b(?:this|past|last)\s+week\b/gi, period: (m, t) => (/^this/i.test(m[0]) ? [t - 7 * DAY_MS, t + DAY_MS] : [t - 14 * DAY_MS, t + DAY_MS]) },
  { re: /\b(?:this|past|last)\s+month\b/gi, period: (m, t) => (/^this/i.test(m[0]) ? [t - 31 * DAY_MS, t + DAY_MS] : [t - 62 * DAY_MS, t + DAY_MS]) },
]

export interface NamedPeriod {
  from: Date
  to: Date
}

/**
 * The period the query's dates span (from inclusive, to exclusive, a day of slack either
 * side), or null when it names none. Years outside 1900–2200 and impossible days are ignored.
 * Relative words count from `now` (the search's clock, or its `asOf`): "this week" is the last
 * 7 days, "last week" the last 14, "this month" the last 31, "last month" the last 62 — a
 * bonus for the right stretch of time, not a calendar.
 *
 * @example
 * namedPeriod('what did Ann say on 3 June 2023?') // → { from: 2023-06-02, to: 2023-06-05 } (UTC)
 * namedPeriod('what happened in May 2023') // → { from: 2023-04-30, to: 2023-06-02 }
 * namedPeriod('what did we decide yesterday', new Date('2025-03-10T12:00:00Z')) // → { from: 2025-03-08, to: 2025-03-11 }
 */
export function namedPeriod(text: string, now?: Date): NamedPeriod | null {
  let from = Infinity
  let to = -Infinity
  let rest = text
  if (now !== undefined) {
    const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS
    for (const { re, period } of RELATIVE) {
      rest = rest.replace(re, (...args) => {
        const [start, end] = period(args.slice(0, -2) as unknown as RegExpExecArray, today)
        from = Math.min(from, start)
        to = Math.max(to, end)
        return ' '.repeat(String(args[0]).length)
      })
    }
  }
  for (const { re, parts } of PATTERNS) {
    rest = rest.replace(re, (...args) => {
      const m = args.slice(0, -2) as unknown as RegExpExecArray
      const [y, mo, d] = parts(m).map((x) => (x === undefined ? undefined : Number(x)))
      if (y === undefined || mo === undefined || y < 1900 || y > 2200 || mo < 0 || mo > 11) return m[0]
      let start: number
      let end: number
      if (d === undefined) {
        start = Date.UTC(y, mo, 1)
        end = Date.UTC(y, mo + 1, 1)
      } else {
        start = Date.UTC(y, mo, d)
        if (d < 1 || new Date(start).getUTCMonth() !== mo) return m[0]
        end = start + DAY_MS
      }
      from = Math.min(from, start)
      to = Math.max(to, end)
      // Blank the match out so a shorter pattern does not read it again.
      return ' '.repeat(m[0].length)
    })
  }
  if (from === Infinity) return null
  return { from: new Date(from - SLACK_MS), to: new Date(to + SLACK_MS) }
}
