/**
 * Credentials in the shapes providers issue them, generated from a seed. None is real; each
 * is assembled from fragments so that this file does not itself look like a leaked key.
 */

/** The alphabets credentials are drawn from. */
export const LOWER = 'abcdefghijklmnopqrstuvwxyz'
export const UPPER = LOWER.toUpperCase()
export const DIGITS = '0123456789'
export const ALNUM = LOWER + UPPER + DIGITS
export const HEX = '0123456789abcdef'
export const B64 = ALNUM + '+/'
export const URLSAFE = ALNUM + '-_'

/** A small deterministic generator (mulberry32). */
export function generator(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface SecretSample {
  /** The credential type the redactor must report. */
  type: string
  /** The secret itself: it must not appear anywhere once stored. */
  secret: string
  /** The text the secret sits in, as an agent would see it. */
  text: string
}

/** 40 realistic secrets in context. */
export function secretCorpus(seed = 7): SecretSample[] {
  const next = generator(seed)
  const pick = (alphabet: string, n: number) => {
    // Always mixed: every class the alphabet offers appears at least once.
    for (;;) {
      let s = ''
      for (let i = 0; i < n; i++) s += alphabet[Math.floor(next() * alphabet.length)]
      const classes = [LOWER, UPPER, DIGITS].filter((c) => [...c].some((x) => alphabet.includes(x)))
      if (classes.every((c) => [...s].some((x) => c.includes(x)))) return s
    }
  }
  const j = (...parts: string[]) => parts.join('')
  const pem = (label: string, lines: number) =>
    j('-----', 'BEGIN ', label, '-----\n', ...Array.from({ length: lines }, () => pick(B64, 64) + '\n'), pick(B64, 20), '==\n', '-----', 'END ', label, '-----')
  const jwt = () => {
    const enc = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
    return j(enc({ alg: 'HS256', typ: 'JWT' }), '.', enc({ sub: pick(DIGITS, 10), name: 'Ada', iat: 1516239022 }), '.', pick(URLSAFE, 43))
  }

  const samples: SecretSample[] = []
  const add = (type: string, secret: string, wrap: (x: string) => string) => samples.push({ type, secret, text: wrap(secret) })

  add('openai_api_key', j('sk', '-', pick(ALNUM, 48)), (x) => `export OPENAI_API_KEY="${x}"`)
  add('openai_api_key', j('sk', '-proj-', pick(URLSAFE, 124)), (x) => `client = OpenAI(api_key="${x}")`)
  add('openai_api_key', j('sk', '-svcacct-', pick(URLSAFE, 74)), (x) => `the service account key is ${x} for the batch job`)
  add('anthropic_api_key', j('sk', '-ant-', 'api03-', pick(URLSAFE, 93), 'AA'), (x) => `ANTHROPIC_API_KEY=${x}`)
  add('github_token', j('gh', 'p_', pick(ALNUM, 36)), (x) => `git clone https://github.com/acme/app.git # token ${x}`)
  add('github_token', j('gh', 'o_', pick(ALNUM, 36)), (x) => `{"access_token":"${x}","scope":"repo"}`)
  add('github_token', j('gh', 's_', pick(ALNUM, 36)), (x) => `GITHUB_TOKEN: ${x}`)
  add('github_token', j('gh', 'u_', pick(ALNUM, 36)), (x) => `Authorization: token ${x}`)
  add('github_token', j('gh', 'r_', pick(ALNUM, 76)), (x) => `refresh with ${x}`)
  add('github_token', j('github', '_pat_', pick(ALNUM, 22), '_', pick(ALNUM, 59)), (x) => `gh auth login --with-token <<< ${x}`)
  add('gitlab_token', j('gl', 'pat-', pick(URLSAFE, 20)), (x) => `PRIVATE-TOKEN: ${x}`)
  add('slack_token', j('xo', 'xb-', pick(DIGITS, 12), '-', pick(DIGITS, 13), '-', pick(ALNUM, 24)), (x) => `SLACK_BOT_TOKEN=${x}`)
  add('slack_token', j('xo', 'xp-', pick(DIGITS, 11), '-', pick(DIGITS, 12), '-', pick(DIGITS, 13), '-', pick(HEX, 32)), (x) => `slack token: ${x}`)
  add('slack_webhook', j('https://hooks.', 'slack.com/services/T', pick(UPPER + DIGITS, 8), '/B', pick(UPPER + DIGITS, 10), '/', pick(ALNUM, 24)), (x) => `curl -X POST ${x} -d '{}'`)
  add('stripe_key', j('sk', '_live_', pick(ALNUM, 24)), (x) => `Stripe.api_key = '${x}'`)
  add('stripe_key', j('rk', '_live_', pick(ALNUM, 99)), (x) => `restricted key ${x}`)
  add('stripe_webhook_secret', j('wh', 'sec_', pick(ALNUM, 32)), (x) => `STRIPE_WEBHOOK_SECRET=${x}`)
  add('google_api_key', j('AI', 'za', 'Sy', pick(URLSAFE, 33)), (x) => `https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=${x}`)
  add('google_oauth_secret', j('GOC', 'SPX-', pick(URLSAFE, 28)), (x) => `client secret ${x}`)
  add('huggingface_token', j('hf', '_', pick(LOWER + UPPER, 34)), (x) => `huggingface-cli login --token ${x}`)
  add('npm_token', j('np', 'm_', pick(ALNUM, 36)), (x) => `//registry.npmjs.org/:_authToken=${x}`)
  add('sendgrid_api_key', j('S', 'G.', pick(URLSAFE, 22), '.', pick(URLSAFE, 43)), (x) => `sg = SendGridAPIClient('${x}')`)
  add('twilio_api_key', j('S', 'K', pick(HEX, 32)), (x) => `twilio api key sid ${x}`)
  add('aws_access_key_id', j('AK', 'IA', pick(UPPER + DIGITS, 16)), (x) => `aws_access_key_id = ${x}`)
  add('aws_access_key_id', j('AS', 'IA', pick(UPPER + DIGITS, 16)), (x) => `"AccessKeyId": "${x}",`)
  add('aws_secret_access_key', j(pick(ALNUM, 17), '/', pick(ALNUM, 12), '+', pick(ALNUM, 9)), (x) => `[default]\naws_secret_access_key = ${x}\n`)
  add('aws_secret_access_key', j(pick(ALNUM, 20), '/', pick(ALNUM, 19)), (x) => `AWS credentials for the deploy user: ${x}`)
  add('azure_account_key', j(pick(B64, 86), '=='), (x) => `DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey=${x};EndpointSuffix=core.windows.net`)
  add('private_key', pem('RSA PRIVATE KEY', 6), (x) => `$ cat ~/.ssh/id_rsa\n${x}\n$ `)
  add('private_key', pem('OPENSSH PRIVATE KEY', 5), (x) => `${x}\n`)
  add('private_key', pem('EC PRIVATE KEY', 3), (x) => `key.pem:\n${x}`)
  add('private_key', pem('PGP PRIVATE KEY BLOCK', 8), (x) => `Exported secret key:\n${x}`)
  add('private_key', pem('PRIVATE KEY', 10).replace(/\n/g, '\\n'), (x) => `{"type": "service_account", "project_id": "acme-prod", "private_key": "${x}\\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}`)
  add('jwt', jwt(), (x) => `Authorization: Bearer ${x}`)
  add('jwt', jwt(), (x) => `the session cookie was ${x}; it expired`)
  add('url_password', pick(ALNUM, 16), (x) => `git remote add origin https://deploy:${x}@git.acme.io/app.git`)
  add('url_password', pick(ALNUM, 14), (x) => `DATABASE_URL=postgres://app:${x}@db.internal:5432/prod`)
  add('url_password', pick(ALNUM, 18), (x) => `mongodb+srv://reader:${x}@cluster0.ab1cd.mongodb.net/shop?retryWrites=true`)
  add('connection_string_password', j(pick(ALNUM, 12), '!'), (x) => `Server=tcp:acme.database.windows.net,1433;Database=shop;User ID=admin;Password=${x};Encrypt=True;`)
  add('secret', pick(ALNUM, 32), (x) => `API_KEY=${x}`)
  add('secret', pick(HEX, 40), (x) => `{"client_secret": "${x}"}`)
  add('secret', j(pick(LOWER, 5), pick(DIGITS, 3), pick(UPPER, 3), '#'), (x) => `database:\n  password: ${x}\n`)
  add('secret', pick(URLSAFE, 40), (x) => `my api key is ${x}`)
  add('bearer_token', pick(ALNUM + '._-', 40), (x) => `curl -H "Authorization: Bearer ${x}" https://api.acme.io/v1/me`)
  return samples
}

/** 40 strings that look a little like secrets and are not: they must be stored untouched. */
export function nearMisses(seed = 11): string[] {
  const next = generator(seed)
  const pick = (alphabet: string, n: number) => {
    let s = ''
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(next() * alphabet.length)]
    return s
  }
  const sha = pick(HEX, 40)
  const png = `data:image/png;base64,iVBORw0KGgo${pick(B64, 600)}AAAAAElFTkSuQmCC`
  return [
    `commit ${sha}\nAuthor: Ada <ada@acme.io>`,
    `git checkout ${sha.slice(0, 7)}`,
    `Merge ${pick(HEX, 40)} into ${pick(HEX, 40)}`,
    `request id 550e8400-e29b-41d4-a716-446655440000 failed`,
    `{"id": "${crypto.randomUUID()}", "token_count": 1234}`,
    `<img src="${png}">`,
    `background: url(data:image/svg+xml;base64,${btoa('<svg xmlns="http://www.w3.org/2000/svg"/>')})`,
    `"integrity": "sha512-${pick(B64, 86)}=="`,
    `"integrity": "sha1-${pick(B64, 27)}="`,
    `sha256: ${pick(HEX, 64)}`,
    `${pick(HEX, 64)}  dist/engram.tgz`,
    `"version": "19.1.0-rc.2", "resolved": "https://registry.npmjs.org/react/-/react-19.1.0-rc.2.tgz"`,
    `npm install @huggingface/transformers@4.3.1 --save-exact`,
    `const maxTokensPerRequestForTheModel = computeMaximumTokenBudget(modelConfiguration)`,
    `src/core/db/schema/0002-memories.ts and test/unit/privacy.test.ts`,
    `see https://docs.github.com/en/authentication/keeping-your-account-and-data-secure for details`,
    `Please reset your password: use the link we emailed you.`,
    `The password must be at least twelve characters long.`,
    `password: ********`,
    `OPENAI_API_KEY=sk-...`,
    `export OPENAI_API_KEY=YOUR_API_KEY`,
    `api_key = "<your-api-key>"`,
    `token: \${{ secrets.GITHUB_TOKEN }}`,
    `const apiKey = process.env.OPENAI_API_KEY`,
    `password = getPasswordFromVault()`,
    'password=$DB_PASSWORD',
    `aws_access_key_id = AKIAIOSFODNN7EXAMPLE`,
    `sk-learn is the name people use for scikit-learn`,
    `evt_01jq3x8r5ffq8t5m6pz0c9w2ak and mem_01jq3x8r5ffq8t5m6pz0c9w2am`,
    `https://github.com/acme/app/blob/${sha}/README.md`,
    `postgres://localhost:5432/engram_test`,
    `mongodb://db.internal:27017/shop`,
    `the secret to good caching is invalidation`,
    `${pick(B64, 120)}`,
    `Payload: ${btoa(pick(ALNUM + ' ', 90))}`,
    `ThisIsAVeryLongCamelCaseIdentifierThatIsNotASecretAtAll`,
    `AbstractSingletonProxyFactoryBeanConfigurationLoader.java:117`,
    `tokenizer: Xenova/all-MiniLM-L6-v2, max_tokens: 256`,
    `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${pick(B64, 43)} ada@laptop`,
    `-----BEGIN CERTIFICATE-----\n${pick(B64, 64)}\n-----END CERTIFICATE-----`,
    `"key": "${pick(ALNUM, 24)}"`,
    `font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, sans-serif;`,
  ]
}
