import { CompiledQuery, type QueryResult } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';
import { sendRead, sendWrite } from './pipeline.ts';

/** Under SQLite's and PostgreSQL's bound-parameter limits. */
const MAX_PARAMETERS = 30_000;
/** Longer statements cost more to parse than they save in round trips. */
const MAX_ROWS = 1_000;

type Constant = string | number | null;

/** Constants are the generator's own values, never user input; quotes are doubled regardless. */
function literal(value: Constant): string {
  if (value === null) return 'null';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('not a finite number');
    return String(value);
  }
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * Multi-row INSERTs, chunked under both backends' parameter limits. Raw SQL: building a large
 * Kysely query costs more than running it. `ahead`: rows whose insert the caller expects to succeed
 * (no constraint it catches), sent ahead on PostgreSQL (src/db/pipeline.ts).
 */
export async function insertRows(
  db: Db,
  table: string,
  columns: readonly string[],
  rows: readonly unknown[][],
  constants: Record<string, Constant> = {},
  options: { addOnConflict?: Upsert; ahead?: boolean } = {},
): Promise<void> {
  for (const query of insertStatements(db, table, columns, rows, constants, options.addOnConflict))
    await (options.ahead ? sendWrite(db, query) : db.executeQuery(query));
}

/**
 * `insertRows`, with the rows as stored (`returning *`) read later: on PostgreSQL the statements
 * are sent and the write goes on (`sendRead`); `rows()` waits for their answers, and throws the
 * insert's error if it failed.
 */
export async function insertRowsReturning<R>(
  db: Db,
  table: string,
  columns: readonly string[],
  rows: readonly unknown[][],
): Promise<{ rows(): Promise<R[]> }> {
  const sent: Array<{ answer: Promise<QueryResult<R>> }> = [];
  for (const query of insertStatements(db, table, columns, rows, {}, undefined, ' returning *'))
    sent.push(await sendRead<R>(db, query));
  return {
    async rows() {
      const stored: R[] = [];
      for (const { answer } of sent) stored.push(...(await answer).rows);
      return stored;
    },
  };
}

function* insertStatements(
  db: Db,
  table: string,
  columns: readonly string[],
  rows: readonly unknown[][],
  constants: Record<string, Constant>,
  upsert: Upsert | undefined,
  returning = '',
): Generator<CompiledQuery> {
  const postgres = dialectOf(db) === 'postgres';
  const perStatement = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMETERS / columns.length)));
  const fixed = Object.keys(constants);
  const head = `insert into ${table} (${[...columns, ...fixed].join(', ')}) values `;
  const tail = fixed.map((c) => `,${literal(constants[c])}`).join('');
  const end = upsert
    ? ` on conflict (${upsert.key.join(', ')}) do update set ${upsert.add} = ${table}.${upsert.add} + excluded.${upsert.add}`
    : '';
  for (let start = 0; start < rows.length; ) {
    const chunk = rows.slice(start, start + chunkSize(rows.length - start, perStatement, postgres));
    start += chunk.length;
    const parameters: unknown[] = [];
    for (const row of chunk) for (let c = 0; c < columns.length; c++) parameters.push(row[c]);
    yield CompiledQuery.raw(
      statementText(head, tail, columns.length, chunk.length, postgres) + end + returning,
      parameters,
    );
  }
}

/** On a `key` conflict, adds `add` to the existing row's. One call must not repeat a key (PostgreSQL refuses). */
export interface Upsert {
  key: readonly string[];
  add: string;
}

/**
 * Full statements, then the rest: on SQLite in powers of two, as its connection keeps every
 * statement it prepared and one per remainder size grew the demo's memory a lot; on PostgreSQL in
 * one, as only statements of a few parameters are kept there (src/db/pg-prepared.ts).
 */
function chunkSize(left: number, max: number, postgres: boolean): number {
  if (left >= max) return max;
  return postgres ? left : 2 ** Math.floor(Math.log2(left));
}

const texts = new Map<string, string>();

/** Full chunks repeat, so each text is built (and prepared) once. */
function statementText(head: string, tail: string, width: number, rows: number, postgres: boolean): string {
  const key = `${head}|${tail}|${width}|${rows}|${postgres}`;
  let text = texts.get(key);
  if (text === undefined) {
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const slots = Array.from({ length: width }, (_, c) => (postgres ? `$${r * width + c + 1}` : '?'));
      tuples.push(`(${slots.join(',')}${tail})`);
    }
    text = head + tuples.join(',');
    if (texts.size > 100) texts.clear();
    texts.set(key, text);
  }
  return text;
}
