import type { BrowserContext, Page } from '@playwright/test'

/** Opens the harness page, which puts the public API on `window.engram`. */
export async function openHarness(page: Page): Promise<void> {
  await page.goto('/harness.html')
  await page.waitForFunction(() => window.engramHarnessReady === true)
}

/** `count` tabs of one browser context (one origin's storage), each with the harness open, in order. */
export async function openHarnessTabs(context: BrowserContext, count: number): Promise<Page[]> {
  const pages: Page[] = []
  for (let i = 0; i < count; i++) {
    const page = await context.newPage()
    await openHarness(page)
    pages.push(page)
  }
  return pages
}
