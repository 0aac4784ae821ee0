import { createQueryId, type CompiledQuery, type Compilable, type RawBuilder, type RootOperationNode } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/** A statement to run: a query builder, raw SQL, or a query already compiled. */
export type Runnable = Compilable | RawBuilder<unknown> | CompiledQuery;

/** The statement compiled, once. */
export const compiledOf = (db: Db, q: Runnable): CompiledQuery =>
  !('compile' in q) ? q : 'isRawBuilder' in q ? q.compile(db) : q.compile();

/**
 * Statements built once per shape (decision 0038): the first call of a shape builds it with a
 * stand-in per value and notes where each landed among the parameters; later calls put the values
 * there. A shape is the backend, the `variant` and the values' names one level into records and
 * rows; `build` must use each value only as a parameter (checked). Plugins skip the cache.
 */
const STAND_IN = Symbol('stand-in');
/** Where a value is: its name, then a member's name, or a row's index and a member's name. */
type Path = ReadonlyArray<string | number>;
type StandIn = { readonly [STAND_IN]: Path };

type Values = Record<string, unknown>;

interface Shape {
  sql: string;
  query: RootOperationNode;
  /** Each parameter: the path of the value it takes, or a constant the builder wrote itself. */
  parameters: Array<{ path: Path } | { constant: unknown }>;
}

/** Shapes kept per statement: far more than any statement's real shapes, so a runaway cannot grow without bound. */
const MAX_SHAPES = 256;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

/** Rows for `values([...])`: a non-empty array of records. Any other array is one value (PostgreSQL's `= any($1)`). */
const isRows = (value: unknown): value is Array<Record<string, unknown>> =>
  Array.isArray(value) && value.length > 0 && value.every(isRecord);

const isStandIn = (value: unknown): value is StandIn =>
  typeof value === 'object' && value !== null && STAND_IN in value;

/** A record's members' names; undefined ones are left out, as Kysely leaves them out of `set` and `values`. */
function membersKey(record: Record<string, unknown>): string {
  let key = '{';
  for (const member in record) if (record[member] !== undefined) key += `${member},`;
  return `${key}}`;
}

/** The shape's key: the names of the values, one level into records and rows. */
function keyOf(values: Values): string {
  let key = '';
  for (const name in values) {
    const value = values[name];
    key += name;
    if (isRows(value)) {
      key += '[';
      for (const row of value) key += membersKey(row);
      key += ']';
    } else if (isRecord(value)) key += membersKey(value);
    key += ',';
  }
  return key;
}

/** What `build` gets: a stand-in for each value, and their number. */
function standInsOf(values: Values): { standIns: Values; count: number } {
  let count = 0;
  const standIn = (path: Path): StandIn => {
    count++;
    return { [STAND_IN]: path };
  };
  const members = (record: Record<string, unknown>, path: Path) => {
    const out: Values = {};
    for (const member in record) if (record[member] !== undefined) out[member] = standIn([...path, member]);
    return out;
  };
  const standIns: Values = {};
  for (const name in values) {
    const value = values[name];
    standIns[name] = isRows(value)
      ? value.map((row, i) => members(row, [name, i]))
      : isRecord(value)
        ? members(value, [name])
        : standIn([name]);
  }
  return { standIns, count };
}

/** The value at a path of the caller's values. */
function valueAt(values: Values, path: Path): unknown {
  let value: unknown = values;
  for (const step of path) value = (value as Record<string | number, unknown>)[step];
  return value;
}

function compileShape(db: Db, query: Compilable | RawBuilder<unknown>, count: number): Shape {
  const compiled = compiledOf(db, query);
  const used = new Set<string>();
  const parameters = compiled.parameters.map((p) => {
    if (!isStandIn(p)) return { constant: p };
    used.add(p[STAND_IN].join('.'));
    return { path: p[STAND_IN] };
  });
  if (used.size !== count)
    throw new Error(`statement: ${count - used.size} value(s) did not become parameters of: ${compiled.sql}`);
  return { sql: compiled.sql, query: compiled.query, parameters };
}

export function statement<V extends Values, R, K extends string = string>(
  build: (db: Db, values: V, variant: K | undefined) => Compilable<R> | RawBuilder<R>,
): (db: Db, values: V, variant?: K) => CompiledQuery<R> {
  const shapes = new Map<string, Shape>();
  return (db, values, variant) => {
    // A database with plugins (a test's query counter) compiles every time, so its plugins see every query.
    if (db.getExecutor().plugins.length > 0) {
      return compiledOf(db, build(db, values, variant)) as CompiledQuery<R>;
    }
    const key = `${dialectOf(db)}|${variant ?? ''}|${keyOf(values)}`;
    let shape = shapes.get(key);
    if (shape === undefined) {
      const { standIns, count } = standInsOf(values);
      shape = compileShape(db, build(db, standIns as V, variant), count);
      if (shapes.size < MAX_SHAPES) shapes.set(key, shape);
    }
    const parameters = shape.parameters.map((p) => ('constant' in p ? p.constant : valueAt(values, p.path)));
    return { sql: shape.sql, query: shape.query, parameters, queryId: createQueryId() } as CompiledQuery<R>;
  };
}
