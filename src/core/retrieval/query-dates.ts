/**
 * Dates a search query names in words ("on 3 June 2023", "June 3, 2023", "in May 2023",
 * "2023-06-03", and relative to the search's clock "today", "yesterday", "3 days ago", "last
 * week", "this month"), as one period of time. Search ranks events from that period higher: a
 * question that names a day is mostly about what was said that day.
 */

const DAY_MS = 86_400_000
/** Slack either side of a named period, so a day named in any time zone covers its events. */
const SLACK_MS = DAY_MS

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const MONTH = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)'
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?'
const YEAR = '(\\d{4})'
const SEP = '(?:,\\s*|\\s+)'
const NUMBER_WORDS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7 }

const month = (name: string) => MONTHS.indexOf(name.slice(0, 3).toLowerCase())

/** A calendar day or month as [start, end) in ms since the epoch; null when it does not exist. */
function calendar(year: number, mo: number, day?: number): [number, number] | null {
  if (year < 1900 || year > 2200 || mo < 0 || mo > 11) return null
  if (day === undefined) return [Date.UTC(year, mo, 1), Date.UTC(year, mo + 1, 1)]
  const start = Date.UTC(year, mo, day)
  return day < 1 || new Date(start).getUTCMonth() !== mo ? null : [start, start + DAY_MS]
}

/**
 * How each form of date becomes a period: `today` is the start of the clock's UTC day; the
 * `relative` forms are skipped without a clock. Tried in this order; each match is blanked out,
 * so a shorter form does not read it again.
 */
const RULES: { re: RegExp; relative?: true; period: (m: RegExpExecArray, today: number) => [number, number] | null }[] = [
  { re: /\btoday\b/gi, relative: true, period: (_, t) => [t, t + DAY_MS] },
  { re: /\byesterday\b/gi, relative: true, period: (_, t) => [t - DAY_MS, t] },
  {
    re: /\b(\d{1,3}|an?|one|two|three|four|five|six|seven)\s+(day|week)s?\s+ago\b/gi,
    relative: true,
    period: (m, t) => {
      const n = NUMBER_WORDS[m[1]!.toLowerCase()] ?? Number(m[1])
      const back = n * (m[2]!.toLowerCase() === 'week' ? 7 : 1) * DAY_MS
      return [t - back, t - back + DAY_MS]
    },
  },
  // "this week" the last 7 days, "last week" the last 14; months 31 and 62.
  {
    re: /\b(this|past|last)\s+(week|month)\b/gi,
    relative: true,
    period: (m, t) => {
      const days = (m[2]!.toLowerCase() === 'week' ? 7 : 31) * (m[1]!.toLowerCase() === 'this' ? 1 : 2)
      return [t - days * DAY_MS, t + DAY_MS]
    },
  },
  // 2023-06-03
  { re: /\b(\d{4})-(\d{2})-(\d{2})\b/g, period: (m) => calendar(Number(m[1]), Number(m[2]) - 1, Number(m[3])) },
  // 3 June 2023, 3rd of June, 2023
  {
    re: new RegExp(`\\b${DAY}\\s+(?:of\\s+)?${MONTH}\\.?${SEP}${YEAR}\\b`, 'gi'),
    period: (m) => calendar(Number(m[3]), month(m[2]!), Number(m[1])),
  },
  // June 3, 2023
  {
    re: new RegExp(`\\b${MONTH}\\.?\\s+${DAY}${SEP}${YEAR}\\b`, 'gi'),
    period: (m) => calendar(Number(m[3]), month(m[1]!), Number(m[2])),
  },
  // June 2023
  { re: new RegExp(`\\b${MONTH}\\.?${SEP}${YEAR}\\b`, 'gi'), period: (m) => calendar(Number(m[2]), month(m[1]!)) },
]

export interface NamedPeriod {
  from: Date
  to: Date
}

/** The first and last instants a time may take (years 1–9999). */
const FIRST_TIME = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_TIME = Date.parse('9999-12-31T23:59:59.999Z')

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
  const today = now === undefined ? undefined : Math.floor(now.getTime() / DAY_MS) * DAY_MS
  let from = Infinity
  let to = -Infinity
  let rest = text
  for (const { re, relative, period } of RULES) {
    if (relative && today === undefined) continue
    rest = rest.replace(re, (...args) => {
      const m = args.slice(0, -2) as unknown as RegExpExecArray
      const found = period(m, today ?? 0)
      if (!found) return m[0]
      from = Math.min(from, found[0])
      to = Math.max(to, found[1])
      return ' '.repeat(m[0].length)
    })
  }
  if (from === Infinity) return null
  // Within the years a time may take (time.ts): a relative word said as of the year 1 names
  // no day before it.
  return { from: new Date(Math.max(from - SLACK_MS, FIRST_TIME)), to: new Date(Math.min(to + SLACK_MS, LAST_TIME)) }
}
