import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/errors.ts'
import { toMemoryError, withMemoryErrors } from '../../src/core/db-errors.ts'
import { storageError } from '../../src/worker/storage.ts'

const domError = (name: string, message = name) => Object.assign(new Error(message), { name })

describe('storage failures become errors a caller can act on', () => {
  it('maps the platform errors to stable codes and keeps the cause', () => {
    const quota = domError('QuotaExceededError', 'The quota has been exceeded.')
    const mapped = storageError(quota, 'recordTurn failed')
    expect(mapped).toBeInstanceOf(MemoryError)
    expect(mapped.code).toBe('QUOTA_EXCEEDED')
    expect(mapped.cause).toBe(quota)
    expect(mapped.message).toMatch(/quota/i)
    expect(storageError(domError('UnknownError', 'IDB write failed: quota reached'), 'x').code).toBe('QUOTA_EXCEEDED')
    expect(storageError(domError('NoModificationAllowedError'), 'x').code).toBe('LOCKED_BY_OTHER_TAB')
    expect(storageError(domError('SecurityError', 'denied'), 'x').code).toBe('STORAGE_UNAVAILABLE')
  })

  it('a quota error thrown under an engine call is QUOTA_EXCEEDED, not INTERNAL', async () => {
    const quota = new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    expect(toMemoryError(quota)).toMatchObject({ code: 'QUOTA_EXCEEDED', cause: quota })
    const api = withMemoryErrors({
      async record() {
        throw quota
      },
    })
    await expect(api.record()).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' })
    expect(toMemoryError(domError('TypeError', 'x')).code).toBe('INTERNAL')
  })

  it('leaves a MemoryError as it is', () => {
    const original = new MemoryError('CLOSED', 'closed')
    expect(storageError(original, 'x')).toBe(original)
  })
})
