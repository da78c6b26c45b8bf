/**
 * Dates a search query names in words ("on 3 June 2023", "June 3, 2023", "in May 2023",
 * "2023-06-03"), as one period of time. Search ranks events from that period higher: a
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

/** Slack either side of a named period, so a day named in any time zone covers its events. */
const SLACK_MS = 86_400_000

export interface NamedPeriod {
  from: Date
  to: Date
}

/**
 * The period the query's dates span (from inclusive, to exclusive, a day of slack either
 * side), or null when it names none. Years outside 1900–2200 and impossible days are ignored.
 *
 * @example
 * namedPeriod('what did Ann say on 3 June 2023?') // → { from: 2023-06-02, to: 2023-06-05 } (UTC)
 * namedPeriod('what happened in May 2023') // → { from: 2023-04-30, to: 2023-06-02 }
 */
export function namedPeriod(text: string): NamedPeriod | null {
  let from = Infinity
  let to = -Infinity
  let rest = text
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
        end = start + 86_400_000
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
