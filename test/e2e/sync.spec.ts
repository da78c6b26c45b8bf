import { type BrowserContext, expect, type Page, test } from '@playwright/test'
import { type NodeMemory, openMemory, serveSync, type SyncServer } from '../../src/node/index.ts'
import { postgresBinaries, startTestPostgres, type TestPostgres } from '../support/postgres-server.ts'
import { openHarness } from './support.ts'

type Api = {
  recordTurn(input: { conversationId: string; user: string; agent: string }): Promise<unknown>
  kv: {
    put(scope: string, namespace: string, key: string, payload: unknown): Promise<unknown>
    get(scope: string, namespace: string, key: string): Promise<{ payload: unknown } | null>
  }
  diffSince(since: string): Promise<{ events: { id: string; turnIndex: number | null; scope: { conversationId: string } }[] }>
  sync(remote: { url: string; token: string }): Promise<{ pushed: Record<string, number>; pulled: Record<string, number> }>
  observeDocument(input: { conversationId: string; url: string; content: string }): Promise<unknown>
  documents: { history(ref: string): Promise<{ versions: { id: string; version: number }[] }> }
}

declare global {
  interface Window {
    device: Api
  }
}

let postgres: TestPostgres
let server: NodeMemory
let http: SyncServer

test.beforeAll(async () => {
  const bin = postgresBinaries()
  if (!bin) throw new Error('The sync test needs PostgreSQL (see the README: Development)')
  postgres = await startTestPostgres(bin)
  server = await openMemory({ postgres: postgres.url })
  http = await serveSync(server)
})

test.afterAll(async () => {
  await http?.close()
  await server?.close()
  await postgres?.stop()
})

/** A device: a browser context of its own (its own storage), with a memory open in a page. */
async function device(context: BrowserContext): Promise<Page> {
  const page = await context.newPage()
  await openHarness(page)
  await page.evaluate(async () => {
    window.device = await window.engram.createMemory({ name: 'notes', storage: 'idb' })
  })
  return page
}

const turn = (page: Page, conversationId: string, text: string) =>
  page.evaluate(({ c, t }) => window.device.recordTurn({ conversationId: c, user: `${t}?`, agent: `${t}.` }), { c: conversationId, t: text })

const sync = (page: Page, token: string) =>
  page.evaluate((remote) => window.device.sync(remote), { url: http.url, token })

/** Each event of the device as `id conversation#turn`, sorted. */
const events = (page: Page) =>
  page.evaluate(async () =>
    (await window.device.diffSince('1970-01-01T00:00:00Z')).events.map((e) => `${e.id} ${e.scope.conversationId}#${e.turnIndex}`).sort(),
  )

test('two browser devices sync through a Node server on PostgreSQL', async ({ browser }) => {
  test.setTimeout(120_000)
  const laptop = await server.devices.add({ name: 'laptop' })
  const phone = await server.devices.add({ name: 'phone' })
  const contexts = [await browser.newContext(), await browser.newContext()]
  const [a, b] = await Promise.all(contexts.map(device)) as [Page, Page]

  // Offline writes on both, the same page read on both, then each syncs.
  await turn(a, 'c1', 'the laptop, offline')
  await turn(b, 'c1', 'the phone, offline')
  for (const page of [a, b]) {
    await page.evaluate(() => window.device.observeDocument({ conversationId: 'c1', url: 'https://example.com/guide', content: 'Read me.' }))
  }
  await sync(a, laptop.token)
  await sync(b, phone.token)
  await sync(a, laptop.token)
  expect(await events(a)).toEqual(await events(b))
  expect((await events(a)).map((e) => e.split(' ')[1]).sort()).toEqual(['c1#0', 'c1#0', 'c1#1', 'c1#1'])
  // One document, one version: the phone's read of the same content joined the laptop's.
  const versions = (p: Page) =>
    p.evaluate(async () => (await window.device.documents.history('https://example.com/guide')).versions.map((v) => `${v.id} v${v.version}`))
  expect(await versions(b)).toEqual(await versions(a))
  expect(await versions(a)).toHaveLength(1)

  // Concurrent writes and syncs on both.
  await Promise.all([turn(a, 'c1', 'laptop, at once'), turn(b, 'c1', 'phone, at once')])
  await Promise.all([
    a.evaluate(() => window.device.kv.put('user:me', 'prefs', 'theme', { text: 'light' })),
    b.evaluate(() => window.device.kv.put('user:me', 'prefs', 'theme', { text: 'dark' })),
  ])
  await Promise.all([sync(a, laptop.token), sync(b, phone.token)])
  await Promise.all([sync(a, laptop.token), sync(b, phone.token)])
  const both = await events(a)
  expect(await events(b)).toEqual(both)
  expect(both).toHaveLength(8)
  expect(new Set(both.map((e) => e.split(' ')[1])).size).toBe(4)
  const theme = (p: Page) => p.evaluate(async () => (await window.device.kv.get('user:me', 'prefs', 'theme'))?.payload)
  expect(await theme(a)).toEqual(await theme(b))

  // A push cut off after the server took it, then run again: nothing twice.
  await turn(a, 'c2', 'cut off')
  let cut = false
  await contexts[0]?.route('**/sync/push', async (route) => {
    if (cut) return route.continue()
    cut = true
    await route.fetch()
    await route.abort('connectionreset')
  })
  await expect(sync(a, laptop.token)).rejects.toThrow(/STORAGE_UNAVAILABLE|cannot be reached/)
  await sync(a, laptop.token)
  await sync(b, phone.token)
  expect(await events(b)).toEqual(await events(a))
  expect((await events(b)).filter((e) => e.includes('c2#'))).toHaveLength(2)

  // A revoked token is refused.
  await server.devices.revoke(phone.deviceId)
  const refused = await b.evaluate(async (remote) => window.device.sync(remote).then(() => 'synced', (e: { code?: string }) => e.code), {
    url: http.url,
    token: phone.token,
  })
  expect(refused).toBe('UNAUTHORIZED')
  await Promise.all(contexts.map((c) => c.close()))
})
