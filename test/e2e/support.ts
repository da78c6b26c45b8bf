import type { Page } from '@playwright/test'

/** Opens the harness page, which puts the public API on `window.engram`. */
export async function openHarness(page: Page): Promise<void> {
  await page.goto('/harness.html')
  await page.waitForFunction(() => window.engramHarnessReady === true)
}
