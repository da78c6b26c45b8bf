import { execFile, execFileSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { openMemory } from '../../src/node/index.ts'

const run = promisify(execFile)

/** A PostgreSQL server of the tests' own: a throwaway cluster on a local port. */
export interface TestPostgres {
  /** A connection string to its `postgres` database, as its superuser. */
  url: string
  stop(): Promise<void>
}

/**
 * The folder of PostgreSQL's server programs (`initdb`, `pg_ctl`): `pg_config --bindir`, or
 * the newest under Debian's /usr/lib/postgresql. Null when none is installed.
 */
export function postgresBinaries(): string | null {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
    if (existsSync(join(dir, 'initdb'))) return dir
  } catch {
    // No pg_config: look where Debian puts the servers.
  }
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return null
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  return newest ? join(root, newest, 'bin') : null
}

/**
 * Starts a new cluster in a temporary folder, listening on 127.0.0.1 only, with trust
 * authentication (nothing else can reach it). Postgres refuses to run as root, so as root it
 * runs as the `postgres` user the Debian package makes.
 */
export async function startTestPostgres(bin: string): Promise<TestPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'engram-postgres-'))
  const asRoot = process.getuid?.() === 0
  const as = (program: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]) : run(join(bin, program), args)
  if (asRoot) {
    const { uid, gid } = postgresUser()
    await chown(root, uid, gid)
  }
  const data = join(root, 'data')
  const port = await freePort()
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'])
  const settings = [`-p ${port}`, "-c listen_addresses=127.0.0.1", `-c unix_socket_directories=${root}`, '-c fsync=off']
  await as('pg_ctl', ['-D', data, '-l', join(root, 'log'), '-o', settings.join(' '), '-w', 'start'])
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined)
      await rm(root, { recursive: true, force: true })
    },
  }
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/** The migrated database each server test memory is copied from. */
export const SERVER_TEMPLATE = 'engram_template'

/** Makes the template database and migrates it (an open of a memory there does). */
export async function makeServerTemplate(url: string): Promise<void> {
  const admin = new pg.Client(url)
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${SERVER_TEMPLATE}`)
  } finally {
    await admin.end()
  }
  const memory = await openMemory({ postgres: databaseUrl(url, SERVER_TEMPLATE) })
  await memory.close()
}

export function databaseUrl(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}
