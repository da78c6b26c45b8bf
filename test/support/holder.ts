import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/** A process running test/support/lock-holder.ts, writing to a memory back to back. */
export interface Holder {
  /** Settles once the holder has had writes acknowledged; rejects if it exits first. */
  writing: Promise<void>
  /** The acknowledged writes it has reported so far. */
  acknowledged(): number
  /** Kills it with SIGKILL; resolves once it has exited, with the time of the kill. */
  kill(): Promise<number>
}

/** Starts a holder with `env` added to this process's (which memory it opens). */
export function startHolder(env: Record<string, string>): Holder {
  const holder = spawn(process.execPath, ['bench/run.mjs', 'test/support/lock-holder.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((resolve) => holder.on('exit', resolve))
  let acknowledged = 0
  const writing = new Promise<void>((resolve, reject) => {
    createInterface({ input: holder.stdout }).on('line', (line) => {
      const wrote = /^wrote (\d+)$/.exec(line)
      if (!wrote) return
      acknowledged = Number(wrote[1])
      resolve()
    })
    void exited.then(() => reject(new Error('the holder exited before writing')))
  })
  return {
    writing,
    acknowledged: () => acknowledged,
    kill: async () => {
      holder.kill('SIGKILL')
      const killed = performance.now()
      await exited
      return killed
    },
  }
}
