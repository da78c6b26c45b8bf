/**
 * A corpus of credentials, each format a function that builds a fresh instance from a seeded
 * generator, and of look-alikes that are not secrets. The seed is random unless given, so each
 * run tries new values, and a failure names the seed that reproduces it. No value is real;
 * prefixes are assembled from fragments so that this file does not itself look like a leak.
 */
import { ALNUM, B64, DIGITS, generator, HEX, LOWER, UPPER, URLSAFE } from './secrets.ts'

const PASSWORD = ALNUM + '!#*^~+-_.='
/** What a password in a URL may hold unescaped. */
const URL_PASSWORD = ALNUM + '!*~-_.'

/** Characters a value may start with that once hid it from the `KEY=value` rule. */
export const LEADING_PUNCTUATION = ['@', '$', '%', '&', '(', ')', '[', ']', '{', '}', ';', ',', '<', '/', "'", '"']
/** Characters a value may hold that once cut it short or hid it. */
export const INNER_PUNCTUATION = ['(', ')', '[', ']', '{', '}', ';', ',', '<', '>', "'", '"', '%s']

/** A seed for one run. */
export function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] as number
}

function tools(seed: number) {
  const next = generator(seed)
  const int = (n: number) => Math.floor(next() * n)
  const one = <T>(list: readonly T[]) => list[int(list.length)] as T
  /** Random text from `alphabet`, holding every class (lower, upper, digit) the alphabet has. */
  const pick = (alphabet: string, n: number): string => {
    const classes = [LOWER, UPPER, DIGITS].filter((c) => [...c].some((x) => alphabet.includes(x)))
    for (;;) {
      let s = ''
      for (let i = 0; i < n; i++) s += alphabet[int(alphabet.length)]
      if (n < classes.length * 2 || classes.every((c) => [...s].some((x) => c.includes(x)))) return s
    }
  }
  /** Random text with no class guarantee (hashes, hex ids). */
  const raw = (alphabet: string, n: number) => {
    let s = ''
    for (let i = 0; i < n; i++) s += alphabet[int(alphabet.length)]
    return s
  }
  return { next, int, one, pick, raw }
}

export interface SecretSample {
  /** The format's name, e.g. `github_pat` or `env_value_leading_punctuation`. */
  format: string
  /** The secret: it must not appear anywhere once stored. */
  secret: string
  /** The text the secret sits in, as an agent would see it. */
  text: string
}

/**
 * Parts of a secret that must not survive on their own: the secret and every random-looking
 * run of 8 or more letters and digits in it (a partial redaction leaves one behind).
 */
export function needles(secret: string): string[] {
  const runs = secret.split(/[^A-Za-z0-9]+/).filter((p) => p.length >= 8 && /[0-9]/.test(p) && /[A-Za-z]/.test(p))
  return [...new Set([secret, ...runs])]
}

const j = (...parts: string[]) => parts.join('')

type Format = (t: ReturnType<typeof tools>) => { secret: string; text: string } | { secret: string; text: string }[]

const b64url = (bytes: Uint8Array | string) =>
  btoa(typeof bytes === 'string' ? bytes : String.fromCharCode(...bytes))
    .replace(/=+$/, '')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')

/** A PEM block whose body starts as real keys do (`MI`: a DER sequence; `b3Blbn…`: `openssh-key-v1`). */
function pem(t: ReturnType<typeof tools>, label: string, lines: number, magic = 'MIIE') {
  const body = Array.from({ length: lines }, (_, i) => (i === 0 ? magic + t.pick(B64, 64 - magic.length) : t.pick(B64, 64)))
  return j('-----', 'BEGIN ', label, '-----\n', body.join('\n'), '\n', t.pick(B64, 22), '==\n', '-----', 'END ', label, '-----')
}

function jwt(t: ReturnType<typeof tools>) {
  const header = b64url(JSON.stringify({ alg: t.one(['HS256', 'RS256', 'ES256']), typ: 'JWT' }))
  const payload = b64url(JSON.stringify({ sub: t.raw(DIGITS, 10), name: t.pick(LOWER, 6), iat: 1_700_000_000 + t.int(9_999_999) }))
  return j(header, '.', payload, '.', t.pick(URLSAFE, 43))
}

function discordBotToken(t: ReturnType<typeof tools>) {
  // The first part is the bot's user id (a snowflake) in base64.
  const id = String(1 + t.int(9)) + t.raw(DIGITS, 17 + t.int(2))
  return j(b64url(id), '.', t.pick(URLSAFE, 6), '.', t.pick(URLSAFE, t.one([27, 38])))
}

/**
 * A password as people pick them: letters, digits and a few symbols. Never with `...` or
 * `****`, which the redactor reads as a value elided in documentation.
 */
function password(t: ReturnType<typeof tools>, n = 16): string {
  for (;;) {
    const s = t.pick(PASSWORD, n)
    if (!s.includes('...') && !s.includes('****')) return s
  }
}

/** The secret formats, each building a fresh instance (or several) from the generator. */
const FORMATS: Record<string, Format> = {
  aws_access_key_id: (t) => {
    const s = j('AK', 'IA', t.pick(UPPER + DIGITS, 16))
    return { secret: s, text: `aws_access_key_id = ${s}` }
  },
  aws_temporary_access_key_id: (t) => {
    const s = j('AS', 'IA', t.pick(UPPER + DIGITS, 16))
    return { secret: s, text: `"AccessKeyId": "${s}",` }
  },
  aws_secret_access_key: (t) => {
    const s = j(t.pick(ALNUM, 17), '/', t.pick(ALNUM, 12), '+', t.pick(ALNUM, 9))
    return { secret: s, text: `[default]\naws_secret_access_key = ${s}\n` }
  },
  aws_secret_in_prose: (t) => {
    const s = j(t.pick(ALNUM, 20), '/', t.pick(ALNUM, 19))
    return { secret: s, text: `AWS credentials for the deploy user: ${s}` }
  },
  gcp_api_key: (t) => {
    const s = j('AI', 'za', 'Sy', t.pick(URLSAFE, 33))
    return { secret: s, text: `https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=${s}` }
  },
  gcp_oauth_client_secret: (t) => {
    const s = j('GOC', 'SPX-', t.pick(URLSAFE, 28))
    return { secret: s, text: `client secret ${s}` }
  },
  gcp_service_account_key: (t) => {
    const s = pem(t, 'PRIVATE KEY', 8, 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC').replace(/\n/g, '\\n')
    return { secret: s, text: `{"type": "service_account", "private_key": "${s}\\n", "client_email": "ci@acme.iam.gserviceaccount.com"}` }
  },
  azure_storage_connection_string: (t) => {
    const s = j(t.pick(B64, 86), '==')
    return { secret: s, text: `DefaultEndpointsProtocol=https;AccountName=acme${t.raw(LOWER, 4)};AccountKey=${s};EndpointSuffix=core.windows.net` }
  },
  azure_service_bus_connection_string: (t) => {
    const s = j(t.pick(B64, 43), '=')
    return { secret: s, text: `Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${s}` }
  },
  azure_sql_connection_string: (t) => {
    const s = j(password(t, 14), '!')
    return { secret: s, text: `Server=tcp:acme.database.windows.net,1433;Database=shop;User ID=admin;Password=${s};Encrypt=True;` }
  },
  azure_sas_token: (t) => {
    const s = j(t.pick(ALNUM, 30), '%2B', t.pick(ALNUM, 10), '%3D')
    return { secret: s, text: `https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig=${s}` }
  },
  github_pat_classic: (t) => {
    const s = j('gh', 'p_', t.pick(ALNUM, 36))
    return { secret: s, text: `git clone https://github.com/acme/app.git # token ${s}` }
  },
  github_oauth_token: (t) => {
    const s = j('gh', 'o_', t.pick(ALNUM, 36))
    return { secret: s, text: `{"access_token":"${s}","scope":"repo"}` }
  },
  github_app_token: (t) => {
    const s = j('gh', 's_', t.pick(ALNUM, 36))
    return { secret: s, text: `GITHUB_TOKEN: ${s}` }
  },
  github_user_token: (t) => {
    const s = j('gh', 'u_', t.pick(ALNUM, 36))
    return { secret: s, text: `Authorization: token ${s}` }
  },
  github_fine_grained_pat: (t) => {
    const s = j('github', '_pat_', t.pick(ALNUM, 22), '_', t.pick(ALNUM, 59))
    return { secret: s, text: `gh auth login --with-token <<< ${s}` }
  },
  gitlab_pat: (t) => {
    const s = j('gl', 'pat-', t.pick(URLSAFE, 20))
    return { secret: s, text: `PRIVATE-TOKEN: ${s}` }
  },
  slack_bot_token: (t) => {
    const s = j('xo', 'xb-', t.raw(DIGITS, 12), '-', t.raw(DIGITS, 13), '-', t.pick(ALNUM, 24))
    return { secret: s, text: `SLACK_BOT_TOKEN=${s}` }
  },
  slack_user_token: (t) => {
    const s = j('xo', 'xp-', t.raw(DIGITS, 11), '-', t.raw(DIGITS, 12), '-', t.raw(DIGITS, 13), '-', t.raw(HEX, 32))
    return { secret: s, text: `slack token: ${s}` }
  },
  slack_webhook: (t) => {
    const s = j('https://hooks.', 'slack.com/services/T', t.pick(UPPER + DIGITS, 8), '/B', t.pick(UPPER + DIGITS, 10), '/', t.pick(ALNUM, 24))
    return { secret: s, text: `curl -X POST ${s} -d '{}'` }
  },
  stripe_live_secret_key: (t) => {
    const s = j('sk', '_live_', t.pick(ALNUM, 24))
    return { secret: s, text: `Stripe.api_key = '${s}'` }
  },
  stripe_restricted_key: (t) => {
    const s = j('rk', '_live_', t.pick(ALNUM, 99))
    return { secret: s, text: `restricted key ${s}` }
  },
  stripe_webhook_secret: (t) => {
    const s = j('wh', 'sec_', t.pick(ALNUM, 32))
    return { secret: s, text: `STRIPE_WEBHOOK_SECRET=${s}` }
  },
  openai_project_key: (t) => {
    const s = j('sk', '-proj-', t.pick(URLSAFE, 74), 'T3Blbk', 'FJ', t.pick(URLSAFE, 74))
    return { secret: s, text: `client = OpenAI(api_key="${s}")` }
  },
  openai_legacy_key: (t) => {
    const s = j('sk', '-', t.pick(ALNUM, 20), 'T3Blbk', 'FJ', t.pick(ALNUM, 20))
    return { secret: s, text: `export OPENAI_API_KEY="${s}"` }
  },
  anthropic_api_key: (t) => {
    const s = j('sk', '-ant-', 'api03-', t.pick(URLSAFE, 93), 'AA')
    return { secret: s, text: `ANTHROPIC_API_KEY=${s}` }
  },
  openrouter_api_key: (t) => {
    const s = j('sk', '-or-v1-', t.raw(HEX, 64))
    return { secret: s, text: `OpenRouter key ${s}` }
  },
  huggingface_token: (t) => {
    const s = j('hf', '_', t.pick(LOWER + UPPER, 34))
    return { secret: s, text: `huggingface-cli login --token ${s}` }
  },
  discord_bot_token: (t) => {
    const s = discordBotToken(t)
    return { secret: s, text: `client.login('${s}')` }
  },
  discord_bot_token_env: (t) => {
    const s = discordBotToken(t)
    return { secret: s, text: `DISCORD_TOKEN=${s}` }
  },
  discord_webhook: (t) => {
    const s = t.pick(URLSAFE, 68)
    return { secret: s, text: `https://discord.com/api/webhooks/${t.raw(DIGITS, 18)}/${s}` }
  },
  telegram_bot_token: (t) => {
    const s = j(String(1 + t.int(9)), t.raw(DIGITS, 9), ':AA', t.pick(URLSAFE, 33))
    return { secret: s, text: `https://api.telegram.org/bot${s}/sendMessage` }
  },
  twilio_api_key: (t) => {
    const s = j('S', 'K', t.raw(HEX, 32))
    return { secret: s, text: `twilio api key sid ${s}` }
  },
  twilio_auth_token: (t) => {
    const s = t.raw(HEX, 32)
    return { secret: s, text: `TWILIO_AUTH_TOKEN=${s}` }
  },
  sendgrid_api_key: (t) => {
    const s = j('S', 'G.', t.pick(URLSAFE, 22), '.', t.pick(URLSAFE, 43))
    return { secret: s, text: `sg = SendGridAPIClient('${s}')` }
  },
  mailgun_api_key: (t) => {
    const s = j('key', '-', t.raw(HEX, 32))
    return { secret: s, text: `mailgun: ${s}` }
  },
  npm_token: (t) => {
    const s = j('np', 'm_', t.pick(ALNUM, 36))
    return { secret: s, text: `//registry.npmjs.org/:_authToken=${s}` }
  },
  pypi_token: (t) => {
    const s = j('py', 'pi-', 'AgEIcHlwaS5vcmc', t.pick(URLSAFE, 70))
    return { secret: s, text: `[pypi]\nusername = __token__\npassword = ${s}` }
  },
  digitalocean_token: (t) => {
    const s = j('do', 'p_v1_', t.raw(HEX, 64))
    return { secret: s, text: `doctl auth init -t ${s}` }
  },
  shopify_token: (t) => {
    const s = j('shp', 'at_', t.raw(HEX, 32))
    return { secret: s, text: `X-Shopify-Access-Token: ${s}` }
  },
  jwt: (t) => {
    const s = jwt(t)
    return { secret: s, text: `the session cookie was ${s}; it expired` }
  },
  jwt_bearer: (t) => {
    const s = jwt(t)
    return { secret: s, text: `Authorization: Bearer ${s}` }
  },
  bearer_token: (t) => {
    const s = t.pick(ALNUM + '._-', 40)
    return { secret: s, text: `curl -H "Authorization: Bearer ${s}" https://api.acme.io/v1/me` }
  },
  basic_auth_header: (t) => {
    const s = btoa(`${t.pick(LOWER, 6)}:${password(t, 14)}`)
    return { secret: s, text: `Authorization: Basic ${s}` }
  },
  rsa_private_key: (t) => {
    const s = pem(t, 'RSA PRIVATE KEY', 6)
    return { secret: s, text: `$ cat ~/.ssh/id_rsa\n${s}\n$ ` }
  },
  ec_private_key: (t) => {
    const s = pem(t, 'EC PRIVATE KEY', 3, 'MHcCAQEEI')
    return { secret: s, text: `key.pem:\n${s}` }
  },
  openssh_private_key: (t) => {
    const s = pem(t, 'OPENSSH PRIVATE KEY', 5, 'b3BlbnNzaC1rZXktdjEAAAAA')
    return { secret: s, text: `${s}\n` }
  },
  postgres_url: (t) => {
    const s = t.pick(URL_PASSWORD, 14)
    return { secret: s, text: `DATABASE_URL=postgres://app:${s}@db.internal:5432/prod` }
  },
  mysql_url: (t) => {
    const s = t.pick(URL_PASSWORD, 14)
    return { secret: s, text: `mysql://root:${s}@127.0.0.1:3306/shop` }
  },
  mongodb_srv_url: (t) => {
    const s = t.pick(ALNUM, 18)
    return { secret: s, text: `mongodb+srv://reader:${s}@cluster0.ab1cd.mongodb.net/shop?retryWrites=true` }
  },
  redis_url_without_user: (t) => {
    const s = t.pick(ALNUM, 20)
    return { secret: s, text: `REDIS_URL=redis://:${s}@cache.internal:6379/0` }
  },
  amqp_url: (t) => {
    const s = t.pick(URL_PASSWORD, 14)
    return { secret: s, text: `amqp://guest:${s}@rabbit.internal:5672/vhost` }
  },
  basic_auth_url: (t) => {
    const s = t.pick(URL_PASSWORD, 16)
    return { secret: s, text: `git remote add origin https://deploy:${s}@git.acme.io/app.git` }
  },
  curl_user_password: (t) => {
    const s = password(t, 14)
    return { secret: s, text: `curl -u admin:${s} https://jenkins.acme.io/api/json` }
  },
  env_value_leading_punctuation: (t) =>
    LEADING_PUNCTUATION.map((c) => {
      const s = j(c, password(t, 18))
      return { secret: s, text: `${t.one(['SECRET_KEY', 'DB_PASSWORD', 'API_TOKEN', 'CLIENT_SECRET'])}=${s}` }
    }),
  env_value_inner_punctuation: (t) =>
    INNER_PUNCTUATION.map((c) => {
      const s = j(password(t, 10), c, password(t, 10))
      const name = t.one(['SECRET_KEY', 'DB_PASSWORD', 'AUTH_TOKEN', 'APP_SECRET'])
      return { secret: s, text: `set ${name}=${s} then restart` }
    }),
  env_value_quoted_punctuation: (t) =>
    INNER_PUNCTUATION.filter((c) => c !== "'").map((c) => {
      const s = j(password(t, 9), c, password(t, 9))
      return { secret: s, text: `DB_PASSWORD='${s}'` }
    }),
  export_token: (t) => {
    const s = t.pick(URLSAFE, 40)
    return { secret: s, text: `export VERCEL_TOKEN=${s}` }
  },
  dotenv_secret: (t) => {
    const s = t.pick(ALNUM, 32)
    return { secret: s, text: `NODE_ENV=production\nSESSION_SECRET=${s}\nPORT=3000` }
  },
  json_password_text: (t) => {
    const s = j(t.pick(ALNUM, 2), '(', t.pick(ALNUM, 5), '#', t.pick(ALNUM, 3))
    return { secret: s, text: `{"user": "admin", "password": "${s}"}` }
  },
  json_client_secret: (t) => {
    const s = t.raw(HEX, 40)
    return { secret: s, text: `{"client_secret": "${s}"}` }
  },
  yaml_password: (t) => {
    const s = j(t.pick(LOWER, 5), t.raw(DIGITS, 3), t.pick(UPPER, 3), '#', t.pick(ALNUM, 3))
    return { secret: s, text: `database:\n  user: app\n  password: ${s}\n` }
  },
  yaml_api_key: (t) => {
    const s = t.pick(ALNUM, 32)
    return { secret: s, text: `services:\n  weather:\n    api_key: "${s}"\n` }
  },
  code_assignment: (t) => {
    const s = password(t, 20)
    return { secret: s, text: `const dbPassword = "${s}";` }
  },
  prose_my_password: (t) => {
    const s = j(t.pick(ALNUM, 3), t.one(['(', '#', '!', ')', ']']), t.pick(ALNUM, 7))
    return { secret: s, text: `my password is ${s} if you need to log in` }
  },
  prose_api_key: (t) => {
    const s = t.pick(URLSAFE, 40)
    return { secret: s, text: `the api key is ${s}` }
  },
  prose_token_for: (t) => {
    const s = t.pick(ALNUM, 24)
    return { secret: s, text: `The token for staging is ${s}.` }
  },
  prose_wifi_password: (t) => {
    const s = j(t.pick(LOWER, 4), t.raw(DIGITS, 4), t.one(['!', '?', '$']))
    return { secret: s, text: `Our wifi password is ${s}` }
  },
}

/** The number of secret formats the corpus holds. */
export const SECRET_FORMAT_COUNT = Object.keys(FORMATS).length

/** Every secret format, freshly generated: some formats give several samples. */
export function secretCorpus(seed = randomSeed()): SecretSample[] {
  const t = tools(seed)
  return Object.entries(FORMATS).flatMap(([format, make]) => {
    const made = make(t)
    return (Array.isArray(made) ? made : [made]).map((m) => ({ format, ...m }))
  })
}

export interface NearMiss {
  kind: string
  text: string
}

type MissFormat = (t: ReturnType<typeof tools>) => string

/** Look-alikes that are not secrets: stored untouched, each built afresh where that makes sense. */
const NEAR_MISSES: Record<string, MissFormat> = {
  git_sha: (t) => `commit ${t.raw(HEX, 40)}\nAuthor: Ada <ada@acme.io>`,
  git_short_sha: (t) => `git checkout ${t.raw(HEX, 7)} && git log -1`,
  git_merge: (t) => `Merge ${t.raw(HEX, 40)} into ${t.raw(HEX, 40)}`,
  github_blob_url: (t) => `https://github.com/acme/app/blob/${t.raw(HEX, 40)}/README.md`,
  uuid: () => `request id ${crypto.randomUUID()} failed`,
  uuid_json_id: () => `{"id": "${crypto.randomUUID()}", "token_count": 1234}`,
  uuid_session: () => `session_id=${crypto.randomUUID()}`,
  sha256_hash: (t) => `sha256: ${t.raw(HEX, 64)}`,
  sha256sum_line: (t) => `${t.raw(HEX, 64)}  dist/engram.tgz`,
  md5_hash: (t) => `md5 (${t.raw(LOWER, 6)}.zip) = ${t.raw(HEX, 32)}`,
  sha1_hash: (t) => `sha1 ${t.raw(HEX, 40)}`,
  docker_digest: (t) => `image: node@sha256:${t.raw(HEX, 64)}`,
  png_data_uri: (t) => `<img src="data:image/png;base64,iVBORw0KGgo${t.raw(B64, 600)}AAAAAElFTkSuQmCC">`,
  svg_data_uri: () => `background: url(data:image/svg+xml;base64,${btoa('<svg xmlns="http://www.w3.org/2000/svg"/>')})`,
  npm_integrity: (t) => `"integrity": "sha512-${t.raw(B64, 86)}=="`,
  npm_integrity_sha1: (t) => `"integrity": "sha1-${t.raw(B64, 27)}="`,
  version_string: (t) => `engram v${t.int(10)}.${t.int(30)}.${t.int(100)} released`,
  prerelease_version: (t) => `"version": "${t.int(20)}.${t.int(9)}.0-rc.${t.int(9)}+build.${t.int(999)}"`,
  semver_range: (t) => `"react": "^${t.int(19)}.${t.int(9)}.0 || ~${t.int(19)}.${t.int(9)}.${t.int(9)}", "typescript": ">=5.${t.int(9)} <6"`,
  npm_package_name: (t) => `npm install @${t.raw(LOWER, 6)}/${t.raw(LOWER, 5)}-utils@${t.int(9)}.${t.int(9)}.${t.int(9)} --save-exact`,
  unix_path: (t) => `/usr/local/lib/node_modules/${t.raw(LOWER, 7)}/dist/index.js`,
  windows_path: (t) => `C:\\Users\\${t.raw(LOWER, 5)}\\AppData\\Local\\Temp\\build-${t.raw(DIGITS, 6)}.log`,
  relative_path: (t) => `./src/core/${t.raw(LOWER, 6)}.ts and ../test/unit/${t.raw(LOWER, 6)}.test.ts`,
  url_without_credentials: (t) => `https://example.com/${t.raw(LOWER, 8)}?page=${t.int(99)}&sort=desc#top`,
  url_with_port: (t) => `postgres://localhost:${1024 + t.int(60000)}/engram_test`,
  url_user_without_password: (t) => `ssh://git@github.com/acme/${t.raw(LOWER, 6)}.git and https://${t.raw(LOWER, 4)}@intranet.acme.io/`,
  email_address: (t) => `mail ${t.raw(LOWER, 6)}.${t.raw(LOWER, 5)}@${t.raw(LOWER, 7)}.com about it`,
  iso_date: (t) => `created_at: 20${10 + t.int(20)}-0${1 + t.int(9)}-1${t.int(9)}T0${t.int(9)}:1${t.int(9)}:00.${t.raw(DIGITS, 3)}Z`,
  ipv4_address: (t) => `listening on ${t.int(256)}.${t.int(256)}.${t.int(256)}.${t.int(256)}:${t.int(65535)}`,
  ipv6_address: (t) => `inet6 fe80::${t.raw(HEX, 4)}:${t.raw(HEX, 4)}:${t.raw(HEX, 4)}:${t.raw(HEX, 4)}%en0`,
  mac_address: (t) => `ether ${Array.from({ length: 6 }, () => t.raw(HEX, 2)).join(':')}`,
  css_colours: (t) => `color: #${t.raw(HEX, 6)}; background-color: #${t.raw(HEX, 3)}; border: 1px solid #${t.raw(HEX, 8)};`,
  reset_password_prose: () => `Please reset your password in settings: use the link we emailed you.`,
  password_rule_prose: () => `The password must be at least twelve characters long.`,
  api_key_prose: () => `The api key is stored in the vault, never in the repository.`,
  token_prose: () => `the secret to good caching is invalidation; the token is refreshed hourly`,
  empty_password: () => `PASSWORD=\nPORT=8080`,
  empty_quoted_api_key: () => `API_KEY=""`,
  env_var_names: () => `Set OPENAI_API_KEY, GITHUB_TOKEN and DB_PASSWORD before running.`,
  env_reference: () => 'password=$DB_PASSWORD and token=${API_TOKEN} and secret=%APP_SECRET%',
  code_reference: () => `const apiKey = process.env.OPENAI_API_KEY\npassword = getPasswordFromVault()`,
  ci_secret_reference: () => `token: \${{ secrets.GITHUB_TOKEN }}`,
  placeholders: () => `OPENAI_API_KEY=sk-...\napi_key = "<your-api-key>"\nexport TOKEN=YOUR_TOKEN_HERE`,
  masked_password: () => `password: ********`,
  printf_placeholder: () => `password = '%s'`,
  token_counts: (t) => `max_tokens=${t.int(9000)}, token_count: ${t.int(9000)}, TOKEN_TTL=15m`,
  prefixed_ids: (t) => `evt_01${t.raw(LOWER + DIGITS, 24)} and mem_01${t.raw(LOWER + DIGITS, 24)}`,
  base64_blob: (t) => `Payload: ${btoa(t.raw(ALNUM + ' ', 90))}`,
  camel_case_identifier: () => `ThisIsAVeryLongCamelCaseIdentifierThatIsNotASecretAtAll`,
  ssh_public_key: (t) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${t.raw(B64, 43)} ada@laptop`,
  certificate: (t) => `-----BEGIN CERTIFICATE-----\n${t.raw(B64, 64)}\n-----END CERTIFICATE-----`,
  scikit_learn: () => `sk-learn is the name people use for scikit-learn`,
  aws_documentation_example: () => `aws_access_key_id = AKIAIOSFODNN7EXAMPLE`,
  bearer_prose: () => `The Bearer scheme is defined in RFC 6750; send it in the Authorization header.`,
  password_file: (t) => `DB_PASSWORD_FILE=/run/secrets/${t.raw(LOWER, 6)}`,
}

/** The number of near-miss kinds the corpus holds. */
export const NEAR_MISS_KIND_COUNT = Object.keys(NEAR_MISSES).length

/** Every near-miss kind, freshly generated. */
export function nearMissCorpus(seed = randomSeed()): NearMiss[] {
  // Another stream than the secrets' for the same seed, so that no look-alike repeats a secret's characters.
  const t = tools(seed ^ 0x5bd1e995)
  return Object.entries(NEAR_MISSES).map(([kind, make]) => ({ kind, text: make(t) }))
}
