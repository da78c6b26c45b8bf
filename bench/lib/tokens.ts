import { AutoTokenizer, env } from '@huggingface/transformers'
import { resolve } from 'node:path'

/** Mean token count of `texts` under the bundled model's tokenizer ([CLS] and [SEP] included). */
export async function meanTokens(texts: readonly string[]): Promise<number> {
  env.allowRemoteModels = false
  env.allowLocalModels = true
  env.localModelPath = `${resolve('models')}/`
  const tokenizer = await AutoTokenizer.from_pretrained('all-MiniLM-L6-v2')
  const total = texts.reduce((sum, text) => sum + tokenizer.encode(text).length, 0)
  return Math.round((total / texts.length) * 10) / 10
}
