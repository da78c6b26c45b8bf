// Where the bundled model puts a restatement of a memory, and where it puts a different fact
// written alike: for each cosine threshold, how many restatements `remember` would fold into
// the memory they restate (wanted) and how many different facts it would let one supersede
// and hide (lost). The engine's default `dedupThreshold` is read off this table.
//   node bench/run.mjs bench/dedup-threshold.ts
import { cosineSimilarity } from '../src/embed/embedder.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'

/** The same fact said two ways: one should supersede the other. */
const RESTATED: [string, string][] = [
  ['User prefers dark mode', 'The user likes dark mode'],
  ['User prefers dark mode in the editor', 'User likes a dark theme in the editor'],
  ['Always use single quotes in TypeScript', 'Use single quotes for strings in TypeScript'],
  ['The user lives in Berlin', 'User is based in Berlin'],
  ['Run tests with vitest', 'Tests are run with vitest'],
  ["User's name is Alice", 'The user is called Alice'],
  ['Deploys happen on Fridays', 'We deploy every Friday'],
  ['Never commit directly to main', 'Do not push commits straight to main'],
  ['User prefers tabs over spaces', 'User likes tabs rather than spaces'],
  ['The API base URL is api.example.com', 'API base url: api.example.com'],
  ['User works at Acme Corp as a data scientist', 'User is a data scientist at Acme Corp'],
  ['Prefer pnpm over npm', 'Use pnpm instead of npm'],
  ['User is allergic to peanuts', 'The user has a peanut allergy'],
  ['Code reviews need two approvals', 'Two approvals are required for a code review'],
  ['User prefers concise answers', 'User wants short, concise replies'],
  ['The database is Postgres 16', 'We use Postgres 16 as the database'],
  ['User is learning Japanese', 'The user is studying Japanese'],
  ['Indent with two spaces', 'Use two-space indentation'],
  ['The team meets on Monday mornings', 'Team meeting is every Monday morning'],
  ['User has two kids', 'The user has two children'],
]

/** Two facts that can both be true, written alike: neither should hide the other. */
const DIFFERENT: [string, string][] = [
  ['User lives in Berlin', 'User works in Berlin'],
  ["User's name is Alice", "User's sister is named Alice"],
  ['User likes Python', 'User likes Rust'],
  ['User has a dog named Rex', 'User has a cat named Rex'],
  ["User's birthday is in March", "User's wife's birthday is in March"],
  ['The staging server is at 10.0.0.5', 'The production server is at 10.0.0.5'],
  ['User speaks German', 'User speaks French'],
  ['Alice is the tech lead', 'Bob is the tech lead'],
  ['User drinks coffee in the morning', 'User drinks tea in the morning'],
  ['User visited Japan in 2019', 'User visited Japan in 2023'],
  ['User is vegetarian', "User's partner is vegetarian"],
  ['User plays guitar', 'User plays piano'],
  ['The frontend uses React', 'The admin panel uses React'],
  ['User prefers dark mode', 'User prefers TypeScript'],
  ['Run tests with vitest', 'Build with vite'],
  ['Never commit directly to main', 'Never push on Fridays'],
  ['User is allergic to peanuts', 'User likes peanut butter'],
  ['Code reviews need two approvals', 'Releases need a changelog entry'],
  ['User works at Acme Corp', 'User used to work at Globex'],
  ['User prefers concise answers', 'User prefers detailed explanations with examples'],
]

const embedder = await createTransformersEmbedder()
async function similarities(pairs: [string, string][]): Promise<number[]> {
  const vectors = await embedder.embed(pairs.flat())
  return pairs.map((_, i) => cosineSimilarity(vectors[2 * i] as Float32Array, vectors[2 * i + 1] as Float32Array))
}
const restated = await similarities(RESTATED)
const different = await similarities(DIFFERENT)

process.stdout.write(`model ${embedder.id}; ${RESTATED.length} restatements, ${DIFFERENT.length} different facts written alike\n\n`)
process.stdout.write('| threshold | restatements folded | different facts hidden |\n| ---: | ---: | ---: |\n')
for (let t = 80; t <= 95; t++) {
  const at = t / 100
  const folded = restated.filter((s) => s >= at).length
  const hidden = different.filter((s) => s >= at).length
  process.stdout.write(`| ${at.toFixed(2)} | ${folded} / ${RESTATED.length} | ${hidden} / ${DIFFERENT.length} |\n`)
}
const highest = DIFFERENT.map((p, i) => [p, different[i] as number] as const).sort((a, b) => b[1] - a[1])
process.stdout.write(`\nmost alike different facts:\n`)
for (const [[a, b], s] of highest.slice(0, 5)) process.stdout.write(`  ${s.toFixed(3)}  ${a} | ${b}\n`)
process.exit(0)
