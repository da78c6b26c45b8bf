import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers'
import { resolve } from 'node:path'
import { BUNDLED_MODEL } from '../../src/embed/transformers-embedder.ts'

let tokenizer: Promise<PreTrainedTokenizer> | undefined

/** Mean token count of `texts` under the bundled model's tokenizer ([CLS] and [SEP] included). */
export async function meanTokens(texts: readonly string[]): Promise<number> {
  tokenizer ??= (() => {
    env.allowRemoteModels = false
    env.allowLocalModels = true
    env.localModelPath = `${resolve('models')}/`
    return AutoTokenizer.from_pretrained(BUNDLED_MODEL)
  })()
  const model = await tokenizer
  const total = texts.reduce((sum, text) => sum + model.encode(text).length, 0)
  return Math.round((total / texts.length) * 10) / 10
}
