import { defineConfig } from '@playwright/test'

/**
 * Browser tests run in the system Chromium (no browser download): /usr/bin/chromium or
 * CHROMIUM_PATH. The built demo and harness are served on 127.0.0.1.
 */
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/** Set ENGRAM_E2E_PORT to run several checkouts' browser tests side by side. */
const port = Number(process.env.ENGRAM_E2E_PORT ?? 4173)

export default defineConfig({
  testDir: 'test/e2e',
  timeout: 60_000,
  expect: { timeout: 20_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: process.env.CI ? [['list']] : [['list'], ['html', { open: 'never' }]],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: {
      executablePath,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
  },
  projects: [{ name: 'chromium', use: { browserName: 'chromium' } }],
  webServer: {
    command: `npx vite preview --host 127.0.0.1 --port ${port} --strictPort`,
    url: `http://127.0.0.1:${port}/harness.html`,
    // Never reuse a server: it may be serving another checkout's build.
    reuseExistingServer: false,
    timeout: 60_000,
  },
})
