import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers'
import { Document } from '@langchain/core/documents'
import type { SearchHit, SearchOptions } from '../../core/retrieval/search.ts'

/** What the retriever needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface SearchMemory {
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>
}

export interface EngramRetrieverInput extends BaseRetrieverInput {
  /** `search`'s options: `limit`, `scope`, `channel`, `mode`, `kinds`, `filters`, … */
  search?: SearchOptions
}

/**
 * A LangChain retriever over `memory.search`. Each hit becomes a `Document` whose text is the
 * hit's text and whose metadata holds where it comes from and why it was found (`explain`).
 *
 * @example
 * import { EngramRetriever } from 'engram/langchain'
 * const retriever = new EngramRetriever(memory, { search: { limit: 5, scope: { userId: 'alice' } } })
 * const docs = await retriever.invoke('which file holds the parser?')
 */
export class EngramRetriever extends BaseRetriever {
  lc_namespace = ['engram', 'retrievers']
  readonly #memory: SearchMemory
  readonly #search: SearchOptions

  constructor(memory: SearchMemory, fields: EngramRetrieverInput = {}) {
    const { search, ...rest } = fields
    super(rest)
    this.#memory = memory
    this.#search = search ?? {}
  }

  override async _getRelevantDocuments(query: string): Promise<Document[]> {
    const hits = await this.#memory.search(query, this.#search)
    return hits.map(
      (hit) =>
        new Document({
          pageContent: hit.text,
          id: hit.chunkId,
          metadata: {
            eventId: hit.eventId,
            kind: hit.kind,
            conversationId: hit.conversationId,
            turnIndex: hit.turnIndex,
            actor: hit.actor,
            createdAt: hit.createdAt,
            score: hit.score,
            explain: hit.explain,
          },
        }),
    )
  }
}
