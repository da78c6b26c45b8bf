// Serves the built demo on 127.0.0.1 and prints its URL.
import { preview } from 'vite'

const server = await preview({
  preview: { host: '127.0.0.1', port: Number(process.env.PORT ?? 4173), strictPort: false },
})
const url = server.resolvedUrls?.local[0] ?? 'http://127.0.0.1:4173/'
console.log(`\nEngram demo: ${url}\n(offline: everything is served from this machine. Ctrl+C to stop.)\n`)
