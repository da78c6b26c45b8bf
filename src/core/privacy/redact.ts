import type { JsonValue } from '../kernel/json.ts'

/** One span of the original text that the redaction layer replaced, by type (e.g. 'github_token'). */
export interface RedactionFinding {
  type: string
  start: number
  end: number
}

export interface RedactionResult {
  text: string
  findings: RedactionFinding[]
}

/** How many secrets of one type were replaced: what the stored row records, never the secret. */
export interface RedactionCount {
  type: string
  count: number
}

interface Rule {
  type: string
  /** Global regex with the `d` flag; group `secret`, when present, is the part replaced. */
  re: RegExp
  /** Extra check on the matched secret (and the whole match) before it counts. */
  accept?: (secret: string, match: RegExpExecArray) => boolean
  /**
   * Where the secret that the match starts at `start` lies in the text (`[start, end)`), when
   * its end needs judgement; an empty span rejects the match.
   */
  extent?: (match: RegExpExecArray, start: number) => [number, number]
}

/** Token characters a provider key is made of; a key must not be glued to more of them. */
const B = '(?<![A-Za-z0-9_-])'
const E = '(?![A-Za-z0-9_-])'

const rule = (type: string, source: string, accept?: Rule['accept'], flags = '', extent?: Rule['extent']): Rule => ({
  type,
  re: new RegExp(source, `gd${flags}`),
  ...(accept ? { accept } : {}),
  ...(extent ? { extent } : {}),
})

/** Shannon entropy in bits per character. */
export function shannonEntropy(text: string): number {
  if (text.length === 0) return 0
  const counts = new Map<string, number>()
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1)
  let h = 0
  for (const n of counts.values()) {
    const p = n / text.length
    h -= p * Math.log2(p)
  }
  return h
}

const PLACEHOLDER = new RegExp(
  [
    // `<your-key>` and `%s` as written in docs and format strings; a `<` or `%s` inside a random value is not one.
    '\\.\\.\\.|…|<[A-Za-z][\\w -]*>|\\$\\{|\\{\\{|^[\'"]?%[sd][\'"]?$|%\\(\\w+\\)[sd]|\\*{4}|x{6}|X{6}|0{7}|1234567',
    // Whole words in one case, as people write them; a random key seldom spells one exactly.
    ...['your', 'example', 'replace', 'changeme', 'change_me', 'placeholder', 'dummy', 'redacted', 'secret_here'].map(
      (w) =>
        `(?<![a-z])${w}(?![a-z])|(?<![A-Z])${w.toUpperCase()}(?![A-Z])|${w[0]?.toUpperCase() ?? ''}${w.slice(1)}(?![a-z])`,
    ),
  ].join('|'),
)

/** Documentation stand-ins (`sk-...`, `YOUR_API_KEY`, `<token>`, `xxxx`) are not secrets. */
function isPlaceholder(value: string): boolean {
  return PLACEHOLDER.test(value) || /^(.)\1*$/.test(value)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function charClasses(value: string): number {
  return [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length
}

/** A random-looking provider token: not a placeholder, and not one character repeated. */
const randomish =
  (minEntropy = 3) =>
  (secret: string): boolean =>
    !isPlaceholder(secret) && shannonEntropy(secret) >= minEntropy

/** Lower case, upper case and digits: what a random key of any length has and prose seldom does. */
function mixed(value: string): boolean {
  return /[a-z]/.test(value) && /[A-Z]/.test(value) && /[0-9]/.test(value)
}

/** Words that make the value assigned to a name a credential (`API_KEY=`, `"token":`, `password:`). */
const SECRET_LAST_WORDS = new Set([
  'secret',
  'secrets',
  'token',
  'password',
  'passwd',
  'passphrase',
  'apikey',
  'credential',
  'credentials',
  'auth',
  'authorization',
  'pat',
  'secretkey',
  'accesskey',
  'privatekey',
  'clientsecret',
])
const KEY_QUALIFIERS = new Set([
  'api',
  'access',
  'secret',
  'private',
  'signing',
  'encryption',
  'master',
  'account',
  'auth',
  'service',
  'app',
  'subscription',
  'client',
  'session',
])

/** True when a name such as `OPENAI_API_KEY`, `accessToken` or `db.password` names a credential. */
export function isSecretName(name: string): boolean {
  // Most names in text are not credentials: a cheap test first, as this runs on every `name=` and `name:`.
  if (!/secret|token|pass|key|auth|cred|pat/i.test(name)) return false
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
  const last = words[words.length - 1]
  if (last === undefined) return false
  if (SECRET_LAST_WORDS.has(last)) return true
  const before = words[words.length - 2]
  return last === 'key' && before !== undefined && KEY_QUALIFIERS.has(before)
}

function isPasswordName(name: string): boolean {
  return /(?:pass(?:word|wd|phrase)?|pwd)$/i.test(name)
}

/** An identifier made of words (`DB_PASSWORD`, `db_password`, `dbPassword`, `DbPassword`), not random letters. */
const WORDY = /^(?:_*[A-Z]+[0-9]*(?:_+[A-Z]+[0-9]*)*|_*[a-z]+[0-9]*(?:_+[a-z]+[0-9]*)*|_*[a-z]{2,}(?:[A-Z][a-z]{2,})*[0-9]*|(?:[A-Z][a-z]{2,})+[0-9]*)$/
const wordy = (name: string) => name.split('.').every((part) => WORDY.test(part))

/**
 * A reference to a credential kept elsewhere: a variable (`$DB_PASSWORD`, `${TOKEN}`, `%SECRET%`,
 * `@var`), a template (`{{ secret }}`), an environment lookup or a call that fetches it.
 */
function isReference(value: string): boolean {
  if (/^(?:process\.env|import\.meta\.env|Deno\.env|os\.environ|os\.getenv|env\.|ENV\[)/.test(value)) return true
  if (/^\$\{[^}]*\}$|^\$\([^)]*\)$|^\{\{.*\}\}$/.test(value)) return true
  const sigil = /^[$%@&*]([A-Za-z_]\w*)%?$/.exec(value)
  if (sigil?.[1] !== undefined && WORDY.test(sigil[1])) return true
  const bracketed = /^[[({<]\s*([A-Za-z_][\w.]*)\s*[\])}>]$/.exec(value)
  if (bracketed?.[1] !== undefined && wordy(bracketed[1])) return true
  // Code that computes the value: `getPassword()`, `vault.read("db")`, `new Secret(name)`.
  const call = /^(?:new\s+)?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\(.*\)[;,]?$/.exec(value)
  return call?.[1] !== undefined && wordy(call[1].replace(/\$/g, ''))
}

/** A file path (`/run/secrets/db`, `~/.ssh/id_rsa`, `C:\\keys`), unless a segment of it is random. */
function isPath(value: string): boolean {
  if (/^[A-Za-z]:\\/.test(value)) return true
  if (!/^(?:~|\.{1,2})?(?:\/[\w.@+-]+)+\/?$/.test(value)) return false
  return !value.split('/').some((part) => part.length >= 10 && mixed(part))
}

/**
 * Whether a value given to a credential name is itself a credential: long and high in entropy
 * (or, for passwords, at least mixed), and not a placeholder, reference, path, UUID or number.
 * Punctuation anywhere in it (`Tq7)9w`, `(Xp9`, `a%sb`) is part of the value.
 */
function isSecretValue(value: string, name: string): boolean {
  if (value.length === 0 || isPlaceholder(value) || UUID.test(value)) return false
  if (isReference(value) || isPath(value) || value.includes('://')) return false
  if (/^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(value) && wordy(value)) return false
  if (/^\d+$/.test(value) || /^(?:true|false|null|none|undefined|required|optional)$/i.test(value)) return false
  // Identifiers (`apiKeyFromConfig`, `SESSION_TOKEN_NAME`) name a secret; they are not one.
  if (/^[A-Za-z_]+$/.test(value) && !isPasswordName(name)) return false
  // A random hex or base64 value of this length seldom falls below 3 bits per character, but can.
  if (value.length >= 16 && shannonEntropy(value) >= (charClasses(value) >= 2 ? 2.5 : 3)) return true
  return isPasswordName(name) && value.length >= 8 && charClasses(value) >= 2 && shannonEntropy(value) >= 2.5
}

/**
 * A password said in prose ("my password is Zq(8vL2m#Xp9"): at least six characters with a
 * letter and a digit, or a letter, a symbol and both cases, and not a word, path or reference.
 */
function isSaidSecret(value: string): boolean {
  if (value.length < 6 || isPlaceholder(value) || UUID.test(value) || isReference(value) || isPath(value)) return false
  if (value.includes('://') || /^v?\d+(?:\.\d+)+/.test(value) || !/[A-Za-z]/.test(value)) return false
  const symbol = /[^A-Za-z0-9]/.test(value)
  if (!/[0-9]/.test(value) && !(symbol && /[a-z]/.test(value) && /[A-Z]/.test(value))) return false
  return !(/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(value) && wordy(value))
}

/** The longest value read after a credential name: longer ones are cut there, not skipped. */
const MAX_VALUE = 4096

/** The end of `text[start, end)` without the sentence punctuation, closing brackets or quotes put after it. */
function trailingPunctuation(text: string, start: number, end: number): number {
  const value = text.slice(start, end)
  let n = value.length
  const count = (x: string) => value.slice(0, n).split(x).length - 1
  for (;;) {
    const c = value[n - 1]
    if (c === undefined) return start
    const opener = ({ ')': '(', ']': '[', '}': '{' } as Record<string, string>)[c]
    if ('.,;:!?'.includes(c)) n--
    else if (opener !== undefined && count(c) > count(opener)) n--
    else if ((c === '"' || c === "'" || c === '`') && count(c) % 2 === 1) n--
    else return start + n
  }
}

/** The end of the run of non-blank characters at `start`, at most `MAX_VALUE` long. */
function blankAfter(text: string, start: number): number {
  let end = start
  const last = Math.min(text.length, start + MAX_VALUE)
  while (end < last && !/\s/.test(text[end] as string)) end++
  return end
}

/**
 * The value given to a credential name: inside its quotes when quoted; else up to the next
 * blank, or in a list of assignments (`;Password=…;Encrypt=`, `?token=…&page=`) up to the
 * next separator, or in JSON (`"pin": 123,`) up to the next comma or bracket. Punctuation
 * inside a value is part of it, and what the sentence put after it is not. Only a credential
 * name's value is read, so text full of other assignments is read once.
 */
function assignedValue(m: RegExpExecArray, start: number): [number, number] {
  const text = m.input
  if (!isSecretName(m.groups?.name ?? '')) return [start, start]
  const q = text[start]
  if (q === '"' || q === "'" || q === '`') {
    for (let i = start + 1; i < Math.min(text.length, start + MAX_VALUE); i++) {
      const c = text[i]
      if (c === '\\' && q === '"') i++
      else if (c === q) return [start + 1, i]
      else if (c === '\n' || c === '\r') break
    }
  }
  const end = blankAfter(text, start)
  const separator = text[m.index - 1]
  const stop =
    separator === ';' ? /;/ : separator === '?' || separator === '&' ? /[&#]/ : m.groups?.q === '"' ? /[,}\]]/ : undefined
  const cut = stop ? text.slice(start, end).search(stop) : -1
  return [start, trailingPunctuation(text, start, cut < 0 ? end : start + cut)]
}

/** A value said in prose (`my password is …`), without the punctuation that closes the sentence. */
function saidValue(m: RegExpExecArray, start: number): [number, number] {
  return [start, trailingPunctuation(m.input, start, blankAfter(m.input, start))]
}

/** The base64 first part of a Discord bot token is the bot's numeric user id. */
function encodesSnowflake(segment: string): boolean {
  try {
    return /^\d{17,20}$/.test(atob(segment.replace(/-/g, '+').replace(/_/g, '/')))
  } catch {
    return false
  }
}

function decodesToJwtHeader(segment: string): boolean {
  try {
    const b64 = segment.replace(/-/g, '+').replace(/_/g, '/')
    const header: unknown = JSON.parse(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)))
    return header !== null && typeof header === 'object' && typeof (header as { alg?: unknown }).alg === 'string'
  } catch {
    return false
  }
}

const PEM_LABEL = '(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?'

/** Ordered by specificity; overlaps go to the match that starts first, then the longest. */
const RULES: readonly Rule[] = [
  rule('private_key', `-----BEGIN ${PEM_LABEL}-----[\\s\\S]*?(?:-----END ${PEM_LABEL}-----|$)`),
  rule('anthropic_api_key', `${B}sk-ant-(?:[a-z]+\\d{2}-)?[A-Za-z0-9_-]{20,}${E}`, (s) => randomish()(s) && mixed(s)),
  rule(
    'openai_api_key',
    `${B}sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,}${E}`,
    (s) => randomish()(s) && mixed(s),
  ),
  rule('openrouter_api_key', `${B}sk-or-v1-[a-f0-9]{64}${E}`),
  rule('stripe_key', `${B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}${E}`, randomish()),
  rule('stripe_webhook_secret', `${B}whsec_[A-Za-z0-9+/=]{24,}${E}`, randomish()),
  rule('github_token', `${B}(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})${E}`, randomish()),
  rule('gitlab_token', `${B}(?:glpat|gldt|glptt|glrt|glsoat)-[A-Za-z0-9_-]{20,}${E}`, randomish()),
  rule('slack_token', `${B}xox[abprse]-[A-Za-z0-9-]{10,}${E}`, randomish()),
  rule('slack_webhook', `https://hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}`),
  rule('google_api_key', `${B}AIza[0-9A-Za-z_-]{35}${E}`, randomish()),
  rule('google_oauth_secret', `${B}GOCSPX-[A-Za-z0-9_-]{20,}${E}`, randomish()),
  rule('huggingface_token', `${B}hf_[A-Za-z0-9]{30,}${E}`, randomish()),
  rule(
    'discord_bot_token',
    `${B}[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}${E}`,
    (s) => encodesSnowflake(s.slice(0, s.indexOf('.'))),
  ),
  rule('discord_webhook', `https://(?:ptb\\.|canary\\.)?discord(?:app)?\\.com/api/webhooks/\\d{17,20}/(?<secret>[A-Za-z0-9_-]{60,})`),
  rule('telegram_bot_token', `(?<![A-Za-z0-9_-])(?:bot)?(?<secret>\\d{8,10}:AA[A-Za-z0-9_-]{33})${E}`),
  rule('npm_token', `${B}npm_[A-Za-z0-9]{36}${E}`, randomish()),
  rule('pypi_token', `${B}pypi-AgE[A-Za-z0-9_-]{50,}${E}`),
  rule('sendgrid_api_key', `${B}SG\\.[A-Za-z0-9_-]{16,32}\\.[A-Za-z0-9_-]{30,64}${E}`, randomish()),
  rule('twilio_api_key', `${B}SK[0-9a-f]{32}${E}`, randomish(2.5)),
  rule('mailgun_api_key', `${B}key-[0-9a-z]{32}${E}`, randomish()),
  rule('digitalocean_token', `${B}do[opr]_v1_[a-f0-9]{64}${E}`),
  rule('shopify_token', `${B}shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}${E}`),
  rule('databricks_token', `${B}dapi[a-f0-9]{32}(?:-\\d)?${E}`, randomish(2.5)),
  rule('age_secret_key', `${B}AGE-SECRET-KEY-1[0-9A-Z]{58}${E}`),
  rule('aws_access_key_id', `${B}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}${E}`, randomish(2.5)),
  rule(
    'aws_secret_access_key',
    '\\baws[\\s\\S]{0,80}?(?<![A-Za-z0-9/+=])(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])',
    (s) => randomish(3.5)(s) && /[a-z]/.test(s) && /[A-Z]/.test(s) && /[0-9/+]/.test(s),
    'i',
  ),
  rule('azure_account_key', `(?:AccountKey|SharedAccessKey)\\s*=\\s*(?<secret>[A-Za-z0-9+/]{20,}={0,2})`, randomish(), 'i'),
  rule('azure_sas_signature', `[?&]sig=(?<secret>[A-Za-z0-9%+/=]{20,})`, randomish()),
  rule(
    'jwt',
    `${B}eyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]*${E}`,
    (s) => decodesToJwtHeader(s.slice(0, s.indexOf('.'))),
  ),
  rule(
    'url_password',
    '\\b[a-z][a-z0-9+.-]*://[^\\s:/?#@"\'<>]*:(?<secret>[^\\s/?#@"\'<>]+)@',
    (s) => !isPlaceholder(s) && !/^(?:pass(?:word)?|secret|\*+)$/i.test(s),
    'i',
  ),
  rule(
    'connection_string_password',
    '(?:^|[;"\'\\s])(?:Password|Pwd)\\s*=\\s*(?<secret>[^;"\'\\r\\n]+)',
    (s, m) => {
      const around = m.input.slice(Math.max(0, m.index - 200), m.index + m[0].length + 1)
      return (
        around.includes(';') &&
        /(?:server|data source|host|user id|uid|username|database|initial catalog|provider|driver)\s*=/i.test(around) &&
        s.trim().length > 0 &&
        !isPlaceholder(s.trim())
      )
    },
    'i',
    // The password runs to the next ';': trailing blanks are not part of it.
    (m, start) => [start, start + (m.groups?.secret ?? '').trimEnd().length],
  ),
  rule('bearer_token', '\\b(?:Bearer|Basic)\\s+(?<secret>[A-Za-z0-9._~+/-]{16,}=*)', (s) => randomish()(s)),
  rule(
    'secret',
    // The value, read by assignedValue, starts at the empty group `secret`; the lookahead skips names no credential has.
    '(?<![A-Za-z0-9_.-])(?<q>["\']?)(?=[A-Za-z0-9_.-]{0,80}?(?:secret|token|pass|key|auth|cred|pat))(?<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})\\k<q>[ \\t]*(?::=|=>|=|:)[ \\t]*(?<secret>)(?=\\S)',
    (s, m) => isSecretName(m.groups?.name ?? '') && isSecretValue(s, m.groups?.name ?? ''),
    'i',
    assignedValue,
  ),
  rule(
    'secret',
    '(?:^|\\s)(?:-u|--user)[ =][^\\s:]+:(?<secret>)(?=\\S)',
    (s) => isSaidSecret(s),
    '',
    saidValue,
  ),
  rule(
    'secret',
    '\\b(?:pass(?:word|phrase|code|wd)|pin|api[ _-]?key|secret(?:[ _-]?key)?|(?:(?:access|auth|bot|api)[ _-]?)?token)(?:\\s+(?:for|of|on|to|at)(?:\\s+(?:the|my|our))?\\s+[\\w.-]+)?\\s+(?:is|was|=|:)\\s+["\'`]?(?<secret>)(?=\\S)',
    (s) => isSaidSecret(s),
    'i',
    saidValue,
  ),
  rule(
    'secret',
    '\\b(?:api[ _-]?key|secret(?:[ _-]?key)?|(?:access|auth)[ _-]?token|token|password|passphrase)\\b(?:\\s+(?:is|was|here|of|for|the|my|our))*\\s*[:=]?\\s*["\'`]?(?<secret>[A-Za-z0-9_\\-+/=.~]{20,})',
    (s) => !UUID.test(s) && randomish(3.5)(s) && /[a-z]/.test(s) && /[A-Z]/.test(s) && /[0-9]/.test(s),
    'i',
  ),
]

/** Spans no rule may touch: inline images and lockfile integrity hashes are not secrets. */
const PROTECTED = [/data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+/g, /\bsha(?:1|256|384|512)-[A-Za-z0-9+/]+={0,2}/g]

function protectedSpans(text: string): [number, number][] {
  const spans: [number, number][] = []
  for (const re of PROTECTED) {
    re.lastIndex = 0
    for (let m = re.exec(text); m; m = re.exec(text)) spans.push([m.index, m.index + m[0].length])
  }
  return spans
}

type Candidate = RedactionFinding & { order: number }

/**
 * Where a value given to a credential name holds a key of a known type (a PEM block in a JSON
 * string, a token after `TOKEN=`), the key keeps its type; what the value holds besides it is
 * replaced as a plain secret only when letters or digits remain.
 */
function preferTyped(candidates: Candidate[], text: string): Candidate[] {
  const typed = candidates.filter((c) => c.type !== 'secret')
  if (typed.length === 0 || typed.length === candidates.length) return candidates
  const covered = new Uint8Array(text.length)
  for (const t of typed) covered.fill(1, t.start, t.end)
  const out = [...typed]
  for (const c of candidates) {
    if (c.type !== 'secret') continue
    for (let a = c.start; a < c.end; ) {
      if (covered[a] === 1) {
        a++
        continue
      }
      let b = a
      while (b < c.end && covered[b] !== 1) b++
      if ((text.slice(a, b).match(/[A-Za-z0-9]/g)?.length ?? 0) >= 4) out.push({ ...c, start: a, end: b })
      a = b
    }
  }
  return out
}

/**
 * The single point every text passes through before it is stored (event content, chunks,
 * tool excerpts, artifacts, document content, memories, kv payloads). Provider API keys,
 * cloud credentials, private keys, JWTs, passwords in URLs and connection strings and
 * high-entropy values given to credential names are replaced by `[REDACTED:<type>]`. The
 * findings give each replaced span's type and offsets in the original text, never its value.
 *
 * @example
 * redact('OPENAI_API_KEY=sk-proj-…').text // → 'OPENAI_API_KEY=[REDACTED:openai_api_key]'
 */
export function redact(text: string): RedactionResult {
  if (text.length < 8) return { text, findings: [] }
  const shielded = protectedSpans(text)
  const candidates: Candidate[] = []
  RULES.forEach((r, order) => {
    r.re.lastIndex = 0
    for (let m = r.re.exec(text); m; m = r.re.exec(text)) {
      if (m[0].length === 0) {
        r.re.lastIndex++
        continue
      }
      const span = m.indices?.groups?.secret ?? m.indices?.[0]
      const [start, end] = span && r.extent ? r.extent(m, span[0]) : (span ?? [0, 0])
      const secret = text.slice(start, end)
      if (!span || secret.length === 0 || (r.accept && !r.accept(secret, m))) {
        // The context matched but its secret did not: a later start may still hold one.
        r.re.lastIndex = m.index + 1
        continue
      }
      if (shielded.some(([a, b]) => start < b && end > a)) continue
      candidates.push({ type: r.type, start, end, order })
      // A rule whose context is wider than its secret may find another secret inside that context.
      if (m.groups?.secret !== undefined) r.re.lastIndex = Math.max(m.index + 1, end)
    }
  })
  if (candidates.length === 0) return { text, findings: [] }
  const chosen = preferTyped(candidates, text)
  chosen.sort((a, b) => a.start - b.start || b.end - a.end || a.order - b.order)
  const findings: RedactionFinding[] = []
  let out = ''
  let at = 0
  for (const c of chosen) {
    if (c.start < at) continue
    out += `${text.slice(at, c.start)}[REDACTED:${c.type}]`
    at = c.end
    findings.push({ type: c.type, start: c.start, end: c.end })
  }
  return { text: out + text.slice(at), findings }
}

/** Counts findings by type, sorted by type. */
export function countRedactions(findings: readonly { type: string }[]): RedactionCount[] {
  const counts = new Map<string, number>()
  for (const f of findings) counts.set(f.type, (counts.get(f.type) ?? 0) + 1)
  return [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([type, count]) => ({ type, count }))
}

/** Adds up several redaction counts into one list, sorted by type. */
export function mergeRedactions(...lists: readonly (readonly RedactionCount[])[]): RedactionCount[] {
  const counts = new Map<string, number>()
  for (const list of lists) for (const r of list) counts.set(r.type, (counts.get(r.type) ?? 0) + r.count)
  return [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([type, count]) => ({ type, count }))
}

/**
 * Redacts every string value of a JSON value and counts what was replaced. Keys are left
 * alone, but a string under a credential name (`token`, `apiKey`, `password` …) is replaced
 * whole when it looks like a credential, since the name gives the context the text lacks.
 *
 * @example
 * redactJson({ args: { token: 'ghp_…' } }).redactions // → [{ type: 'github_token', count: 1 }]
 */
export function redactJson<T extends JsonValue>(
  value: T,
  options: { keep?: (text: string) => boolean } = {},
): { value: T; findings: number; redactions: RedactionCount[] } {
  const found: { type: string }[] = []
  const walk = (v: JsonValue, name: string | undefined): JsonValue => {
    if (typeof v === 'string') {
      if (options.keep?.(v)) return v
      const r = redact(v)
      if (r.findings.length === 0 && name !== undefined && isSecretName(name) && isSecretValue(v, name)) {
        found.push({ type: 'secret' })
        return '[REDACTED:secret]'
      }
      found.push(...r.findings)
      return r.text
    }
    if (Array.isArray(v)) return v.map((x) => walk(x, name))
    if (v !== null && typeof v === 'object') {
      // Built from entries: a key named __proto__ stays a key, not a change of prototype.
      return Object.fromEntries(Object.entries(v).map(([k, child]) => [k, walk(child, k)]))
    }
    return v
  }
  const out = walk(value, undefined) as T
  return { value: out, findings: found.length, redactions: countRedactions(found) }
}

/**
 * Redacts the strings of any JSON-serialisable value (a kv payload), keeping its shape as
 * JSON would store it.
 */
export function redactUnknown(value: unknown): { value: unknown; redactions: RedactionCount[] } {
  if (value === undefined) return { value, redactions: [] }
  const json = JSON.parse(JSON.stringify(value)) as JsonValue
  const r = redactJson(json)
  return { value: r.value, redactions: r.redactions }
}
