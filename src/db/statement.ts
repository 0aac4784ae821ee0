import { createQueryId, type CompiledQuery, type Compilable, type RawBuilder, type RootOperationNode } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * Statements whose text is built once per shape, not once per request. Building and compiling a
 * query with Kysely cost about a sixth of the server's busy time in a PATCH (issue 21's profile),
 * and the text of the hot statements never changes: only their values do.
 *
 * `statement(build)` returns a function of `(db, values, variant?)` that gives the compiled query.
 * The first call of a shape calls `build` with a stand-in for each value, compiles it, and keeps
 * where each stand-in landed among the parameters; later calls put the values there. A shape is
 * the backend, the `variant` (a string the caller chooses, for what changes the text: a table
 * name) and the names of the values, one level into records, so that `{ set: { phase, status } }`
 * and `{ set: { phase } }` are two shapes, as the update statements they make are.
 *
 * `build` must use each value only as a value (a parameter of the statement), never look into it:
 * a value it tests or measures would be a stand-in's, not the caller's. Every stand-in must land
 * among the parameters, which is checked when the shape is built. Top-level records are records of
 * values (`set(v.set)`, `values(v.row)`); anything below them is one value, whatever it holds.
 */
const STAND_IN = Symbol('stand-in');
type StandIn = { readonly [STAND_IN]: readonly [string, string?] };

type Values = Record<string, unknown>;

interface Shape {
  sql: string;
  query: RootOperationNode;
  /** Each parameter: the path of the value it takes, or a constant the builder wrote itself. */
  parameters: Array<{ path: readonly [string, string?] } | { constant: unknown }>;
}

/** Shapes kept per statement: far more than any statement's real shapes, so a runaway cannot grow without bound. */
const MAX_SHAPES = 256;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

const isStandIn = (value: unknown): value is StandIn => typeof value === 'object' && value !== null && STAND_IN in value;

/** The shape's key: the names of the values, one level into records. Undefined members of records are left out, as Kysely leaves them out of `set` and `values`. */
function keyOf(values: Values): string {
  let key = '';
  for (const name in values) {
    const value = values[name];
    key += name;
    if (isRecord(value)) {
      key += '{';
      for (const member in value) if (value[member] !== undefined) key += `${member},`;
      key += '}';
    }
    key += ',';
  }
  return key;
}

/** What `build` gets: a stand-in for each value, and their number. */
function standInsOf(values: Values): { standIns: Values; count: number } {
  let count = 0;
  const standIn = (path: [string, string?]): StandIn => {
    count++;
    return { [STAND_IN]: path };
  };
  const standIns: Values = {};
  for (const name in values) {
    const value = values[name];
    if (!isRecord(value)) standIns[name] = standIn([name]);
    else {
      const members: Values = {};
      for (const member in value) if (value[member] !== undefined) members[member] = standIn([name, member]);
      standIns[name] = members;
    }
  }
  return { standIns, count };
}

function compileShape(db: Db, query: Compilable | RawBuilder<unknown>, count: number): Shape {
  const compiled = 'isRawBuilder' in query ? query.compile(db) : query.compile();
  const used = new Set<string>();
  const parameters = compiled.parameters.map((p) => {
    if (!isStandIn(p)) return { constant: p };
    used.add(p[STAND_IN].join('.'));
    return { path: p[STAND_IN] };
  });
  if (used.size !== count) throw new Error(`statement: ${count - used.size} value(s) did not become parameters of: ${compiled.sql}`);
  return { sql: compiled.sql, query: compiled.query, parameters };
}

export function statement<V extends Values, R, K extends string = string>(
  build: (db: Db, values: V, variant: K | undefined) => Compilable<R> | RawBuilder<R>,
): (db: Db, values: V, variant?: K) => CompiledQuery<R> {
  const shapes = new Map<string, Shape>();
  return (db, values, variant) => {
    const key = `${dialectOf(db)}|${variant ?? ''}|${keyOf(values)}`;
    let shape = shapes.get(key);
    if (shape === undefined) {
      const { standIns, count } = standInsOf(values);
      shape = compileShape(db, build(db, standIns as V, variant), count);
      if (shapes.size < MAX_SHAPES) shapes.set(key, shape);
    }
    const parameters = shape.parameters.map((p) => {
      if ('constant' in p) return p.constant;
      const [name, member] = p.path;
      return member === undefined ? values[name] : (values[name] as Record<string, unknown>)[member];
    });
    return { sql: shape.sql, query: shape.query, parameters, queryId: createQueryId() } as CompiledQuery<R>;
  };
}
