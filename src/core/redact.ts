/** One span of text the redaction layer replaced, by kind (e.g. 'api_key') and offsets. */
export interface RedactionFinding {
  kind: string
  start: number
  end: number
}

export interface RedactionResult {
  text: string
  findings: RedactionFinding[]
}

/**
 * The single point every text passes through before it is stored (event content, chunks,
 * tool excerpts, artifacts, document content). It returns the text to store and what it
 * replaced. Today it stores text unchanged; secret detection plugs in here.
 *
 * @example
 * redact('hello').text // → 'hello'
 */
export function redact(text: string): RedactionResult {
  return { text, findings: [] }
}
