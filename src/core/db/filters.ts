import { MemoryError } from '../kernel/errors.ts'
import { parseInput, z } from '../kernel/validate.ts'

export const FILTER_OPERATORS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'nin',
  'contains',
  'icontains',
] as const

export type FilterOperator = (typeof FILTER_OPERATORS)[number]
export type FilterScalar = string | number | boolean | null

/** A field is a known column name, a dotted path into the JSON column, or an explicit path. */
export interface FilterCondition {
  field: string | string[]
  operator: FilterOperator
  value: FilterScalar | FilterScalar[]
}

export type FilterExpression =
  | FilterCondition
  | { AND: FilterExpression[] }
  | { OR: FilterExpression[] }
  | { NOT: FilterExpression }

/** A column the filter may name. `sql` is trusted text written by the engine, never input. */
export interface FilterColumn {
  sql: string
  type: 'text' | 'number' | 'timestamp' | 'boolean'
}

export interface CompileFilterOptions {
  /** Whitelisted field names and the columns they stand for. */
  columns: Record<string, FilterColumn>
  /** SQL of the jsonb column every other field is looked up in, e.g. `m.metadata`. */
  jsonColumn: string
  /** Parameters already used by the surrounding statement; the first one here is `$offset+1`. */
  paramOffset: number
}

export interface CompiledFilter {
  sql: string
  params: unknown[]
}

const MAX_DEPTH = 32

const scalar = z.union([z.string(), z.number().finite(), z.boolean(), z.null()])
const condition = z.strictObject({
  field: z.union([z.string().min(1).max(256), z.array(z.string().max(256)).min(1).max(16)]),
  operator: z.enum(FILTER_OPERATORS),
  value: z.union([scalar, z.array(scalar).max(1000)]),
})

export const filterExpressionSchema: z.ZodType<FilterExpression> = z.lazy(() =>
  z.union([
    condition,
    z.strictObject({ AND: z.array(filterExpressionSchema).min(1) }),
    z.strictObject({ OR: z.array(filterExpressionSchema).min(1) }),
    z.strictObject({ NOT: filterExpressionSchema }),
  ]),
)

function invalid(message: string, details: Record<string, unknown> = {}): MemoryError {
  return new MemoryError('INVALID_FILTER', message, { details })
}

/**
 * Compiles a filter expression to a parameterised SQL condition. Field names and values only
 * ever travel as parameters (JSON paths as `text[]`), so no input reaches the SQL text.
 *
 * @example
 * const f = compileFilter({ field: 'tag', operator: 'eq', value: 'work' },
 *   { columns: { user_id: { sql: 'm.user_id', type: 'text' } }, jsonColumn: 'm.metadata', paramOffset: 2 })
 * // f.sql: "(m.metadata #> $3::text[]) = $4::jsonb", f.params: [['tag'], '"work"']
 */
export function compileFilter(expr: unknown, options: CompileFilterOptions): CompiledFilter {
  const parsed = parseInput(filterExpressionSchema, expr, 'filter expression', 'INVALID_FILTER')
  const params: unknown[] = []
  const param = (value: unknown): string => {
    params.push(value)
    return `$${options.paramOffset + params.length}`
  }

  const walk = (e: FilterExpression, depth: number): string => {
    if (depth > MAX_DEPTH) throw invalid(`Filter nests deeper than ${MAX_DEPTH} levels`)
    if ('AND' in e) return `(${e.AND.map((x) => walk(x, depth + 1)).join(' AND ')})`
    if ('OR' in e) return `(${e.OR.map((x) => walk(x, depth + 1)).join(' OR ')})`
    if ('NOT' in e) return `(NOT COALESCE(${walk(e.NOT, depth + 1)}, false))`
    const column = typeof e.field === 'string' ? ownColumn(options.columns, e.field) : undefined
    return column ? columnCondition(column, e, param) : jsonCondition(options.jsonColumn, e, param)
  }

  return { sql: walk(parsed, 0), params }
}

function ownColumn(columns: Record<string, FilterColumn>, field: string): FilterColumn | undefined {
  return Object.hasOwn(columns, field) ? columns[field] : undefined
}

type Param = (value: unknown) => string

const COMPARE: Record<'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte', string> = {
  eq: '=',
  ne: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
}

const PG_TYPE: Record<FilterColumn['type'], string> = {
  text: 'text',
  number: 'float8',
  timestamp: 'timestamptz',
  boolean: 'boolean',
}

function checkColumnValue(column: FilterColumn, field: string, value: FilterScalar): FilterScalar {
  if (value === null) return value
  const ok =
    column.type === 'text'
      ? typeof value === 'string'
      : column.type === 'number'
        ? typeof value === 'number'
        : column.type === 'boolean'
          ? typeof value === 'boolean'
          : (typeof value === 'string' || typeof value === 'number') &&
            !Number.isNaN(new Date(value).getTime())
  if (!ok) throw invalid(`Field "${field}" needs a ${column.type} value`, { field, value })
  return column.type === 'timestamp' ? new Date(value as string | number).toISOString() : value
}

function columnCondition(column: FilterColumn, c: FilterCondition, param: Param): string {
  const field = String(c.field)
  const col = column.sql
  const type = PG_TYPE[column.type]
  switch (c.operator) {
    case 'in':
    case 'nin': {
      if (!Array.isArray(c.value)) throw invalid(`Operator "${c.operator}" needs an array value`, { field })
      const values = c.value.filter((v) => v !== null).map((v) => checkColumnValue(column, field, v))
      const hasNull = values.length !== c.value.length
      const any = `${col} = ANY(${param(values)}::${type}[])`
      const match = hasNull ? `(${any} OR ${col} IS NULL)` : `COALESCE(${any}, false)`
      return c.operator === 'in' ? match : `(NOT ${match})`
    }
    case 'contains':
    case 'icontains': {
      if (column.type !== 'text')
        throw invalid(`Operator "${c.operator}" works on text fields only`, { field })
      if (typeof c.value !== 'string')
        throw invalid(`Operator "${c.operator}" needs a string value`, { field })
      const p = param(c.value)
      return c.operator === 'contains'
        ? `COALESCE(strpos(${col}, ${p}::text) > 0, false)`
        : `COALESCE(strpos(lower(${col}), lower(${p}::text)) > 0, false)`
    }
    default: {
      if (Array.isArray(c.value)) throw invalid(`Operator "${c.operator}" needs a single value`, { field })
      const value = checkColumnValue(column, field, c.value)
      if (value === null) {
        if (c.operator === 'eq') return `(${col} IS NULL)`
        if (c.operator === 'ne') return `(${col} IS NOT NULL)`
        throw invalid(`Operator "${c.operator}" cannot compare with null`, { field })
      }
      const p = param(value)
      if (c.operator === 'ne') return `(${col} IS DISTINCT FROM ${p}::${type})`
      return `COALESCE(${col} ${COMPARE[c.operator]} ${p}::${type}, false)`
    }
  }
}

function jsonPath(field: string | string[]): string[] {
  return typeof field === 'string' ? field.split('.') : field
}

function jsonCondition(json: string, c: FilterCondition, param: Param): string {
  const path = param(jsonPath(c.field))
  const at = `(${json} #> ${path}::text[])`
  const atText = `(${json} #>> ${path}::text[])`
  switch (c.operator) {
    case 'eq':
    case 'ne': {
      if (Array.isArray(c.value)) throw invalid(`Operator "${c.operator}" needs a single value`)
      if (c.value === null) {
        const isNull = `(${at} IS NULL OR ${at} = 'null'::jsonb)`
        return c.operator === 'eq' ? isNull : `(NOT ${isNull})`
      }
      const p = param(JSON.stringify(c.value))
      return c.operator === 'eq'
        ? `COALESCE(${at} = ${p}::jsonb, false)`
        : `(${at} IS DISTINCT FROM ${p}::jsonb)`
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const op = COMPARE[c.operator]
      if (typeof c.value === 'number') {
        return `COALESCE(CASE WHEN jsonb_typeof(${at}) = 'number' THEN ${atText}::float8 END ${op} ${param(c.value)}::float8, false)`
      }
      if (typeof c.value === 'string') {
        return `COALESCE(CASE WHEN jsonb_typeof(${at}) = 'string' THEN ${atText} END ${op} ${param(c.value)}::text, false)`
      }
      throw invalid(`Operator "${c.operator}" needs a number or string value`)
    }
    case 'in':
    case 'nin': {
      if (!Array.isArray(c.value)) throw invalid(`Operator "${c.operator}" needs an array value`)
      const match = `COALESCE(${param(JSON.stringify(c.value))}::jsonb @> jsonb_build_array(${at}), false)`
      return c.operator === 'in' ? match : `(NOT ${match})`
    }
    case 'contains':
    case 'icontains': {
      if (Array.isArray(c.value) || c.value === null)
        throw invalid(`Operator "${c.operator}" needs a single value`)
      const v = param(JSON.stringify(c.value))
      if (c.operator === 'contains') {
        return `COALESCE(CASE jsonb_typeof(${at})
          WHEN 'array' THEN ${at} @> jsonb_build_array(${v}::jsonb)
          WHEN 'string' THEN strpos(${atText}, ${v}::jsonb #>> '{}') > 0
          ELSE false END, false)`
      }
      return `COALESCE(CASE jsonb_typeof(${at})
          WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(${at}) AS e(x)
                                    WHERE lower(e.x) = lower(${v}::jsonb #>> '{}'))
          WHEN 'string' THEN strpos(lower(${atText}), lower(${v}::jsonb #>> '{}')) > 0
          ELSE false END, false)`
    }
  }
}
