import { MemoryError } from '../../core/kernel/errors.ts'

/**
 * The one thing Engram ever asks of a language model: answer a system + user prompt. Used
 * only by the optional fact-extraction pipeline of the `Memory` facade.
 */
export interface LLM {
  generate(system: string, user: string, options: { json: boolean }): Promise<string>
}

export interface OpenAICompatibleOptions {
  /** Base URL of the API, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseUrl: string
  apiKey?: string
  model: string
  temperature?: number
  maxTokens?: number
  /** Retries after HTTP 429 (rate limited); other failures are not retried. */
  maxRetries?: number
  /** First backoff delay; doubles on each retry. */
  baseDelayMs?: number
  fetch?: typeof fetch
  /** Injected for tests; defaults to setTimeout. */
  sleep?: (ms: number) => Promise<void>
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * An `LLM` over any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama, LM
 * Studio, vLLM, llama.cpp server …), with exponential backoff on rate limits only.
 *
 * @example
 * const llm = openAICompatibleLLM({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.2' })
 * const mem = new Memory(engine, { llm })
 */
export function openAICompatibleLLM(options: OpenAICompatibleOptions): LLM {
  const doFetch = options.fetch ?? globalThis.fetch
  const sleep = options.sleep ?? defaultSleep
  const maxRetries = options.maxRetries ?? 3
  const baseDelay = options.baseDelayMs ?? 1000
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`
  return {
    async generate(system, user, { json }) {
      const body = JSON.stringify({
        model: options.model,
        temperature: options.temperature ?? 0,
        ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
        ...(json ? { response_format: { type: 'json_object' } } : {}),
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
      })
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`
      for (let attempt = 0; ; attempt++) {
        let response: Response
        try {
          response = await doFetch(url, { method: 'POST', headers, body })
        } catch (cause) {
          throw new MemoryError('LLM_UNAVAILABLE', `Cannot reach the language model at ${url}`, { cause })
        }
        if (response.status === 429 && attempt < maxRetries) {
          await response.body?.cancel()
          await sleep(baseDelay * 2 ** attempt)
          continue
        }
        if (!response.ok) {
          const detail = (await response.text().catch(() => '')).slice(0, 500)
          throw new MemoryError('LLM_UNAVAILABLE', `The language model answered HTTP ${response.status}`, {
            details: { status: response.status, body: detail },
          })
        }
        const data = (await response.json().catch(() => null)) as {
          choices?: { message?: { content?: unknown } }[]
        } | null
        const content = data?.choices?.[0]?.message?.content
        if (typeof content !== 'string') {
          throw new MemoryError('LLM_UNAVAILABLE', 'The language model answered without message content')
        }
        return content
      }
    },
  }
}

/**
 * Reads JSON out of a model's answer: plain, inside a code fence, or followed or preceded by
 * prose. Returns undefined when there is none.
 */
export function parseModelJson(text: string): unknown {
  const attempt = (s: string): unknown => {
    try {
      return JSON.parse(s)
    } catch {
      return undefined
    }
  }
  const trimmed = text.trim()
  const direct = attempt(trimmed)
  if (direct !== undefined) return direct
  const fence = /```(?:json|JSON)?\s*([\s\S]*?)```/.exec(trimmed)
  if (fence?.[1]) {
    const fenced = attempt(fence[1].trim())
    if (fenced !== undefined) return fenced
  }
  for (let start = 0; start < trimmed.length; start++) {
    const c = trimmed[start]
    if (c !== '[' && c !== '{') continue
    const end = matchingBracket(trimmed, start)
    if (end < 0) continue
    const found = attempt(trimmed.slice(start, end + 1))
    if (found !== undefined) return found
  }
  return undefined
}

/** Index of the bracket closing the one at `start`, skipping strings; -1 if unbalanced. */
function matchingBracket(s: string, start: number): number {
  let depth = 0
  let inString = false
  for (let i = start; i < s.length; i++) {
    const c = s[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') {
      depth--
      if (depth === 0) return i
    }
  }
  return -1
}

/**
 * The list in a model's JSON answer: the array itself, or the array held by `preferredKey`
 * (or by the only array-valued key) of an object, as JSON mode forces an object.
 */
export function modelList(value: unknown, preferredKey: string): unknown[] {
  if (Array.isArray(value)) return value
  if (typeof value !== 'object' || value === null) return []
  const record = value as Record<string, unknown>
  const preferred = record[preferredKey]
  if (Array.isArray(preferred)) return preferred
  const arrays = Object.values(record).filter(Array.isArray)
  if (arrays.length === 1) return arrays[0] as unknown[]
  // A single operation object answered bare.
  return 'event' in record ? [record] : []
}
