import { join } from 'node:path'
import { expect, type Page, test } from '@playwright/test'
import { openMemory, serveSync } from '../../src/node/index.ts'

const SHOTS = 'test-results/screenshots'

/** Every request the page makes, so a test can prove none left this machine. */
function watchRequests(page: Page): string[] {
  const outside: string[] = []
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (url.protocol === 'blob:' || url.protocol === 'data:') return
    if (url.hostname !== '127.0.0.1') outside.push(request.url())
  })
  return outside
}

async function openDemo(page: Page): Promise<void> {
  await page.goto('/')
  await expect(page.locator('body[data-ready="true"]')).toBeAttached({ timeout: 30_000 })
}

async function say(page: Page, text: string): Promise<void> {
  const agentReplies = page.locator('.msg.agent')
  const before = await agentReplies.count()
  await page.getByLabel('Message to the agent').fill(text)
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await expect(agentReplies).toHaveCount(before + 1)
}

async function openTab(page: Page, name: string): Promise<void> {
  await page.getByRole('tab', { name }).click()
  const panel = page.locator(`#panel-${name.toLowerCase()}`)
  await expect(panel).toBeVisible()
  await expect(panel).toHaveAttribute('data-rendered', /\d+/)
}

/** The context panel shows items, and never the notice of a build without retrieval. */
async function expectRetrieval(page: Page): Promise<void> {
  await openTab(page, 'Context')
  const panel = page.locator('#panel-context')
  await expect(panel.locator('.items, .notice, .hint').first()).toBeVisible()
  await expect(panel.getByText('is not in this build of the memory yet')).toHaveCount(0)
}

test('a new user asks the agent to change a file, sees the turn in the graph, edits the file and sees a new version', async ({ page }) => {
  const outside = watchRequests(page)
  page.on('pageerror', (error) => {
    throw error
  })
  await openDemo(page)
  await page.setViewportSize({ width: 1440, height: 900 })

  await say(page, 'add a logout function to auth.ts')
  const reply = page.locator('.msg.agent').last()
  await expect(reply).toContainText('logout')
  await expect(reply.locator('.chip')).toHaveText(['read_file src/auth.ts → v1 (initial)', 'write_file src/auth.ts → v2'])
  await expect(page.locator('#conversations [aria-current="true"]')).toHaveText('add a logout function to auth.ts')

  await openTab(page, 'Graph')
  const graph = page.locator('#panel-graph')
  await expect(graph).toContainText('1 turn, ')
  await graph.getByText('The graph as a list').click()
  await expect(graph.locator('[data-kind="version"]')).toHaveText(['auth.ts v1', 'auth.ts v2'])
  await graph.locator('[data-kind="user"]').click()
  await expect(graph.locator('.node-detail pre')).toHaveText('add a logout function to auth.ts')
  await graph.locator('[data-kind="version"]', { hasText: 'auth.ts v2' }).click()
  await expect(graph.locator('.node-detail pre')).toContainText('export function logout(): void')
  await page.screenshot({ path: `${SHOTS}/graph.png` })

  // The person changes the file outside the agent; the agent's next read records it.
  await page.getByRole('button', { name: 'Edit src/auth.ts' }).click()
  const editor = page.getByRole('dialog')
  const content = editor.getByRole('textbox')
  await content.fill(`${await content.inputValue()}\n// Sessions last one day.\n`)
  await editor.getByRole('button', { name: 'Save change' }).click()
  await openTab(page, 'Documents')
  await expect(page.locator('[data-path="src/auth.ts"] .notice')).toContainText('next read records an external version')
  await say(page, 'read auth.ts')
  await expect(page.locator('.msg.agent').last()).toContainText('changed outside this chat')
  await expect(page.locator('.msg.agent').last().locator('.chip')).toHaveText(['read_file src/auth.ts → v3 (external)'])
  await openTab(page, 'Documents')
  const auth = page.locator('[data-path="src/auth.ts"]')
  await expect(auth.locator('.version')).toHaveCount(3)
  await expect(auth.locator('.version.external')).toContainText('changed outside the agent')
  await expect(auth.locator('.version[data-version="1"] .seen-by')).toContainText('saw a version 2 behind')
  await expect(auth.locator('.facts')).toContainText('3 versions · 1 by the agent · 1 outside')
  await page.screenshot({ path: `${SHOTS}/documents.png` })
  await openTab(page, 'Graph')
  await expect(graph).toContainText('2 turns, ')
  await graph.locator('[data-kind="version"]', { hasText: 'auth.ts v3' }).click()
  await expect(graph.locator('.node-detail h4')).toHaveText('src/auth.ts version 3 (external)')
  await page.screenshot({ path: `${SHOTS}/graph-two-turns.png` })

  // A curated memory.
  await page.getByLabel('Message to the agent').fill('We keep sessions for one day at most')
  await page.getByLabel('as', { exact: true }).selectOption('constraint')
  await page.getByRole('button', { name: 'Remember this' }).click()
  await expect(page.locator('#suggestions')).toContainText('Remembered as a constraint')
  await openTab(page, 'Memories')
  await expect(page.locator('#panel-memories .memory')).toHaveText(/We keep sessions for one day at most/)
  await page.locator('#panel-memories .memory').getByRole('button', { name: 'History' }).click()
  await expect(page.locator('#panel-memories .history')).toContainText('ADD')
  await page.screenshot({ path: `${SHOTS}/memories.png` })

  await openTab(page, 'Storage')
  await expect(page.locator('#panel-storage dl')).toContainText('Origin Private File System')
  await expect(page.locator('#panel-storage table')).toContainText('events')
  await page.screenshot({ path: `${SHOTS}/storage.png` })

  // Keyboard: arrow keys move between the panels, from the last back to the first.
  await page.getByRole('tab', { name: 'Storage' }).focus()
  await page.keyboard.press('ArrowRight')
  await expect(page.getByRole('tab', { name: 'Sync' })).toBeFocused()
  await page.keyboard.press('ArrowRight')
  await expect(page.getByRole('tab', { name: 'Context' })).toBeFocused()
  await expect(page.getByRole('tab', { name: 'Context' })).toHaveAttribute('aria-selected', 'true')

  expect(outside).toEqual([])
})

test('a new conversation asking in other words retrieves the earlier turn, with its reasons and its file now stale', async ({ page }) => {
  const outside = watchRequests(page)
  await openDemo(page)
  await page.setViewportSize({ width: 1440, height: 900 })
  await say(page, 'add a logout function to auth.ts')
  await page.getByRole('button', { name: 'Edit src/auth.ts' }).click()
  const content = page.getByRole('dialog').getByRole('textbox')
  await content.fill(`${await content.inputValue()}\n// Sessions last one day.\n`)
  await page.getByRole('dialog').getByRole('button', { name: 'Save change' }).click()
  await say(page, 'read auth.ts')

  await page.getByRole('button', { name: 'New conversation' }).click()
  await expect(page.locator('#conversations li')).toHaveCount(2)
  // The new conversation's (empty) chat is shown before anything is said in it.
  await expect(page.locator('.msg.agent')).toHaveCount(0)
  await expectRetrieval(page)

  await say(page, 'how does a user end their session?')
  const reply = page.locator('.msg.agent').last()
  await expect(reply).toContainText('add a logout function to auth.ts')
  await expect(reply).toContainText('src/auth.ts v2 (now v3: 1 change since — stale)')

  await page.getByLabel('Message to the agent').fill('how does a user end their session?')
  await openTab(page, 'Context')
  const context = page.locator('#panel-context')
  // The turn that added logout (a later turn that only read the file mentions it too).
  const earlier = context.locator('.item', { hasText: 'Q: add a logout function' }).first()
  await expect(earlier.locator('.why li').first()).toBeVisible()
  await expect(earlier.locator('.source')).toContainText('add a logout function to auth.ts')
  await expect(earlier.locator('.seen .stale', { hasText: 'src/auth.ts v2' })).toContainText('1 change since')
  await page.screenshot({ path: `${SHOTS}/context.png` })
  expect(outside).toEqual([])
})

test('export, clear and import bring back the same conversations, files and memories', async ({ page }) => {
  const outside = watchRequests(page)
  page.on('dialog', (dialog) => void dialog.accept())
  await openDemo(page)
  await say(page, 'add a logout function to auth.ts')
  await page.getByLabel('Message to the agent').fill('We use tabs, not spaces')
  await page.getByRole('button', { name: 'Remember this' }).click()
  await expect(page.locator('#suggestions')).toContainText('Remembered')

  await openTab(page, 'Storage')
  const downloading = page.waitForEvent('download')
  downloading.catch(() => {}) // no download when the build has no export
  await page.getByRole('button', { name: 'Export memory' }).click()
  const status = page.locator('#storage-status')
  await expect(status).not.toHaveText('Exporting…')
  await expect(status).not.toContainText('not in this build')
  const download = await downloading
  const file = await download.path()

  const reloaded = page.waitForEvent('load')
  await page.getByRole('button', { name: 'Clear memory' }).click()
  await reloaded
  await expect(page.locator('body[data-ready="true"]')).toBeAttached({ timeout: 30_000 })
  await expect(page.locator('#conversations li')).toHaveCount(1)
  await expect(page.locator('.msg.agent')).toHaveCount(0)

  await openTab(page, 'Storage')
  await page.getByLabel('Exported file').setInputFiles(file)
  await page.getByRole('button', { name: 'Import (replaces everything)' }).click()
  await expect(page.locator('#storage-status')).toContainText('Imported')
  await expect(page.locator('#conversations button[aria-current="true"]')).toHaveText('add a logout function to auth.ts')
  await expect(page.locator('.msg.agent')).toHaveCount(1)
  await expect(page.locator('.msg.agent .chip')).toHaveText(['read_file src/auth.ts → v1 (initial)', 'write_file src/auth.ts → v2'])
  await openTab(page, 'Memories')
  await expect(page.locator('#panel-memories')).toContainText('We use tabs, not spaces')
  await page.getByRole('button', { name: 'Edit src/auth.ts' }).click()
  await expect(page.getByRole('dialog').getByRole('textbox')).toHaveValue(/export function logout\(\): void/)
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click()
  await openTab(page, 'Documents')
  await expect(page.locator('[data-path="src/auth.ts"] .version')).toHaveCount(2)
  expect(outside).toEqual([])
})

test('a ChatGPT export imports into the sidebar, its turns open like any conversation, and a second import adds nothing', async ({ page }) => {
  const outside = watchRequests(page)
  await openDemo(page)
  const file = join(import.meta.dirname, '../fixtures/chat/chatgpt-conversations.json')
  await page.getByLabel('Import a chat export').setInputFiles(file)
  await expect(page.locator('#import-text')).toContainText('Imported 2 conversations, 3 new turns.')
  await page.getByRole('button', { name: 'Parser date bug (ChatGPT)' }).click()
  await expect(page.locator('.msg.user')).toHaveText([/Why does parseDate fail on 03\/04\/2024\?/, /Make it read DD\/MM instead\./])
  await expect(page.locator('.msg.agent').first()).toContainText('parseDate reads dates as MM/DD')
  await page.getByLabel('Import a chat export').setInputFiles(file)
  await expect(page.locator('#import-text')).toContainText('0 new turns; 3 were already here.')
  await expect(page.locator('#conversations button', { hasText: '(ChatGPT)' })).toHaveCount(2)
  expect(outside).toEqual([])
})

test('a passphrase encrypts sensitive messages at rest; the demo asks for it on opening, and without it they stay unreadable', async ({ page }) => {
  // Three openings of the demo, each a boot of the memory: more than the default budget.
  test.setTimeout(180_000)
  const outside = watchRequests(page)
  page.on('pageerror', (error) => {
    throw error
  })
  await openDemo(page)
  await say(page, 'read README.md')
  await page.getByRole('button', { name: 'New conversation' }).click()
  await expect(page.locator('.msg.agent')).toHaveCount(0)
  await page.getByLabel('Sensitive', { exact: true }).check()
  await say(page, 'my locker code is 4411')
  const mine = page.locator('.msg.user').last()
  await expect(mine.locator('.sensitive')).toHaveText('sensitive')
  // The list of conversations is stored plain, so a sensitive first message does not name it.
  await expect(page.locator('#conversations button[aria-current="true"]')).toHaveText('Sensitive conversation')

  await openTab(page, 'Storage')
  const storage = page.locator('#panel-storage')
  await expect(storage).toContainText('stored as written (no passphrase set)')
  await page.getByLabel('New passphrase (8 characters or more)').fill('orchard lantern 42')
  await page.getByRole('button', { name: 'Encrypt sensitive content' }).click()
  await expect(page.locator('#storage-status')).toContainText('now encrypted at rest')
  await expect(storage).toContainText('encrypted at rest')
  await expect(mine.locator('.sensitive')).toHaveText('sensitive · encrypted')
  await page.getByLabel('Message to the agent').fill('The spare locker key is behind the harbour door')
  await page.getByRole('button', { name: 'Remember this' }).click()
  await expect(page.locator('#suggestions')).toContainText('Remembered')

  // Reopened: the demo asks for the passphrase; a wrong one is refused and asked again.
  await page.reload()
  const unlock = page.getByRole('dialog', { name: 'This memory is encrypted' })
  await expect(unlock).toBeVisible({ timeout: 30_000 })
  await unlock.getByLabel('Passphrase').fill('not the passphrase')
  await unlock.getByRole('button', { name: 'Unlock' }).click()
  await expect(unlock).toBeVisible({ timeout: 30_000 })
  await expect(unlock.getByRole('alert')).toContainText('Check the passphrase')
  await unlock.getByLabel('Passphrase').fill('orchard lantern 42')
  await unlock.getByRole('button', { name: 'Unlock' }).click()
  await expect(page.locator('body[data-ready="true"]')).toBeAttached({ timeout: 30_000 })
  await expect(page.locator('#status')).toContainText('sensitive content encrypted')
  await expect(page.locator('.msg.user').last()).toContainText('my locker code is 4411')
  await openTab(page, 'Memories')
  await expect(page.locator('#panel-memories .memory').first()).toContainText('The spare locker key is behind the harbour door')
  await expect(page.locator('#panel-memories .memory .sensitive').first()).toHaveText('sensitive · encrypted')

  // Opened without it (a wrong try, then Escape): sensitive text stays sealed, the rest reads
  // as ever, and sensitive writes are refused.
  await page.reload()
  await expect(unlock).toBeVisible({ timeout: 30_000 })
  await unlock.getByLabel('Passphrase').fill('still not it')
  await unlock.getByRole('button', { name: 'Unlock' }).click()
  await expect(unlock.getByRole('alert')).toContainText('Check the passphrase', { timeout: 30_000 })
  await page.keyboard.press('Escape')
  await expect(page.locator('body[data-ready="true"]')).toBeAttached({ timeout: 30_000 })
  await expect(page.locator('#status')).toContainText('locked')
  await expect(page.locator('.msg.user').last()).toContainText('Encrypted. Reload the page and unlock')
  await expect(page.locator('.msg.user').last()).not.toContainText('4411')
  await openTab(page, 'Memories')
  await expect(page.locator('#panel-memories .memory').first()).toContainText('Encrypted.')
  await openTab(page, 'Storage')
  await expect(storage).toContainText('unreadable here')
  await expect(page.locator('#vault-set')).toBeHidden()
  await page.locator('#conversations button', { hasText: 'read README.md' }).click()
  await expect(page.locator('.msg.user').first()).toHaveText(/read README\.md/)
  await page.getByLabel('Sensitive', { exact: true }).check()
  await page.getByLabel('Message to the agent').fill('another secret')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  await expect(page.locator('#errors')).toContainText('VAULT_LOCKED')
  expect(outside).toEqual([])
})

test('the Sync panel carries a conversation and a memory to a second browser through a server memory', async ({ browser }) => {
  const server = await openMemory()
  const http = await serveSync(server)
  try {
    const syncFrom = async (page: Page, name: string) => {
      const { token } = await server.devices.add({ name })
      await openTab(page, 'Sync')
      await page.getByLabel('Server address').fill(http.url)
      await page.getByLabel('Device token').fill(token)
      await page.getByRole('button', { name: 'Sync now' }).click()
      await expect(page.locator('#sync-status')).toContainText('Last sync')
    }
    const laptop = await (await browser.newContext()).newPage()
    await openDemo(laptop)
    await say(laptop, 'where is the session timeout set?')
    await laptop.getByLabel('Message to the agent').fill('Sessions last one day')
    await laptop.getByRole('button', { name: 'Remember this' }).click()
    await expect(laptop.locator('#suggestions')).toContainText('Remembered')
    await syncFrom(laptop, 'laptop')
    await expect(laptop.locator('#sync-status')).toContainText(/sent .*events/)

    const phone = await (await browser.newContext()).newPage()
    await openDemo(phone)
    await syncFrom(phone, 'phone')
    await expect(phone.locator('#sync-status')).toContainText(/took .*events/)
    await expect(phone.locator('#conversations')).toContainText('where is the session timeout set?')
    await openTab(phone, 'Memories')
    await expect(phone.locator('#panel-memories')).toContainText('Sessions last one day')
    await Promise.all([laptop.context().close(), phone.context().close()])
  } finally {
    await http.close()
    await server.close()
  }
})
