/**
 * Size limits of the write path. A request over a limit is refused with INVALID_INPUT naming
 * the limit; nothing is written.
 */

/** Serialized JSON content of one event, tool output excluded (it has its own limits). */
export const MAX_EVENT_CONTENT_BYTES = 8 * 1024 * 1024

/** A tool result keeps at most this much of its output on the event itself (UTF-8 bytes). */
export const MAX_TOOL_EXCERPT_BYTES = 64 * 1024

/** Tool output longer than the excerpt is kept whole in `artifacts`, up to this size. */
export const MAX_ARTIFACT_BYTES = 32 * 1024 * 1024

/** Content of one observed document version. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024

/**
 * A document's canonical path or URL, in UTF-8 bytes: its key must fit the index that keeps
 * one document per key (Postgres' btree holds about 2,700 bytes a row).
 */
export const MAX_DOCUMENT_KEY_BYTES = 2000

/** Tool calls in one turn. */
export const MAX_PROCEDURES_PER_TURN = 256

/** Ids an event may cite in `refs`. */
export const MAX_REFS = 1000

/** Tags on one event, and the length of each. */
export const MAX_TAGS = 64
export const MAX_TAG_LENGTH = 200

/** Length of any caller-chosen identifier (tenant, user, agent, conversation, run, actor, tool). */
export const MAX_ID_LENGTH = 256

/** Nesting depth of JSON content and tool arguments. */
export const MAX_JSON_DEPTH = 64

/**
 * Nesting depth of any argument to the API, in arrays and plain objects: room for JSON content
 * at its deepest (and a filter at its deepest) inside the call's own objects. Deeper input is
 * refused before it is validated, so no depth can overflow the call stack.
 */
export const MAX_INPUT_DEPTH = 2 * MAX_JSON_DEPTH

/** UTF-8 length of a string without allocating its encoding. */
export function utf8Length(text: string): number {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4
      i++
    } else n += 3
  }
  return n
}

/** "8 MiB"-style size for messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MiB`
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`
  return `${bytes} bytes`
}

/** The largest revision number of a node or policy entry (Postgres' `int`). */
export const MAX_REVISION = 2_147_483_647

/**
 * Where a sync moves numbers while it numbers rows again (kv revisions, document versions):
 * above any counter a write or an import gives (`MAX_IMPORTED_COUNTER`), apart, and below the
 * int limit.
 */
export const PARKED_COUNTER = 1_050_000_000
export const ARRIVING_COUNTER = 2_100_000_000
