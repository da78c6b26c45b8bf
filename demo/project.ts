/**
 * The small sample project the scripted agent works on. The page keeps the files in a Map
 * (workspace-relative path → content); the memory is opened with a local workspace rooted
 * at ROOT, so it stores documents by the same relative paths.
 */
export const ROOT = '/todo-app'

/** The path a document is stored under: relative to the workspace root. */
export function docPath(relative: string): string {
  return relative
}

/** The workspace-relative path of a document key (an absolute key under ROOT is shortened). */
export function relPath(canonicalKey: string): string {
  return canonicalKey.startsWith(`${ROOT}/`) ? canonicalKey.slice(ROOT.length + 1) : canonicalKey
}

export const SAMPLE_FILES: ReadonlyArray<readonly [string, string]> = [
  [
    'README.md',
    `# Tiny TODO

A small TODO app: people sign in, add tasks, tick them off.

- \`src/app.ts\` keeps the task list
- \`src/auth.ts\` signs people in with a password and keeps their session token
- \`test/auth.test.ts\` checks the login rules
`,
  ],
  [
    'src/app.ts',
    `import { currentUser } from './auth.ts'

export interface Task {
  id: number
  title: string
  done: boolean
}

const tasks: Task[] = []

export function addTask(title: string): Task {
  const task = { id: tasks.length + 1, title, done: false }
  tasks.push(task)
  return task
}

export function completeTask(id: number): void {
  const task = tasks.find((t) => t.id === id)
  if (task) task.done = true
}

export function listTasks(): Task[] {
  return currentUser() ? tasks : []
}
`,
  ],
  [
    'src/auth.ts',
    `const users = new Map([['ann', 'correct horse']])
let session: { user: string; token: string } | null = null

export function login(user: string, password: string): boolean {
  if (users.get(user) !== password) return false
  session = { user, token: crypto.randomUUID() }
  return true
}

export function currentUser(): string | null {
  return session?.user ?? null
}
`,
  ],
  [
    'test/auth.test.ts',
    `import { login, currentUser } from '../src/auth.ts'

test('login with the right password starts a session', () => {
  expect(login('ann', 'correct horse')).toBe(true)
  expect(currentUser()).toBe('ann')
})

test('a wrong password is refused', () => {
  expect(login('ann', 'wrong')).toBe(false)
})
`,
  ],
]

/** A fresh copy of the sample project. */
export function sampleProject(): Map<string, string> {
  return new Map(SAMPLE_FILES.map(([path, content]) => [path, content]))
}
