import { realpathSync } from 'node:fs'
import { posix } from 'node:path'

/**
 * The path of the file `absolute` names, symlinks resolved. A path that does not exist (a
 * file deleted since, or never on this machine) keeps its missing part under its nearest
 * existing folder, resolved; with no such folder it comes back as given.
 *
 * @example
 * realPath('/work/link-to-app/src/index.ts') // → '/work/app/src/index.ts'
 */
export function realPath(absolute: string): string {
  const missing: string[] = []
  for (let head = absolute; ; ) {
    try {
      const real = realpathSync.native(head)
      return missing.length === 0 ? real : posix.join(real, ...missing.reverse())
    } catch {
      const parent = posix.dirname(head)
      if (parent === head) return absolute
      missing.push(posix.basename(head))
      head = parent
    }
  }
}
