import { randomBytes } from 'node:crypto';
import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import type { Db } from './types.ts';
import { compiledOf, type Runnable } from './together.ts';
import { hasServerFunctions } from './dialect.ts';

/**
 * Statements a write sends with its commit: those whose answer it does not need (the maintained
 * counts and the property side tables of src/orders/projections, an order's own inserts, updates
 * and deletes, whose rows the write knows: src/db/as-stored.ts). The write runner opens a list
 * for its transaction and sends the list last, before the events: on PostgreSQL in the same
 * message as the events and COMMIT (pg-call.ts), so the count rows, which every writer of a
 * business shares, are locked only while the database works through that message, never while a
 * reply waits for this process; and a write makes fewer round trips.
 *
 * What is deferred is not visible to the write's own later statements: only statements whose
 * tables the write does not read again go here.
 */
const open = new WeakMap<object, Deferred>();

/**
 * A text the database gives a write as it commits (PostgreSQL): the SO number, whose counter every
 * creator of a business shares, so that its row is locked only while the commit's message runs.
 * Until then the write holds `placeholder` where the text goes (in its answer, its events' data and
 * its stored replay); the commit fills each in (src/events/log.ts, src/write/runner.ts), and its
 * deferred statements read the text with `commit_value(setting)`.
 */
export interface CommitValue {
  /** A fresh random text no client can know or send. */
  placeholder: string;
  /** The transaction-local setting `take` leaves the text in, which later statements of the commit read. */
  setting: string;
  /** Takes the text and sets `setting`, which the commit's later statements read (and check) with `commit_value`. */
  take: CompiledQuery;
}

/** A write's statements for its commit: the values to take first, then the deferred statements. */
export interface Deferred {
  values: CommitValue[];
  statements: CompiledQuery[];
}

/** Starts collecting the deferred statements of a write's transaction. */
export function openDeferred(trx: Db): void {
  open.set(trx, { values: [], statements: [] });
}

/** The transaction's commit values and deferred statements, in the order they were asked for; the list is closed. */
export function takeDeferred(trx: Db): Deferred {
  const deferred = open.get(trx) ?? { values: [], statements: [] };
  open.delete(trx);
  return deferred;
}

/**
 * Asks for a text to be taken as the write commits (see `CommitValue`), on PostgreSQL inside a
 * write, and returns the placeholder to hold until then; undefined otherwise (SQLite, where one
 * writer at a time makes the wait moot, or outside the write runner): the caller takes it now.
 * `take(setting)` builds the statement, which must end by selecting `set_config(setting, text,
 * true) as value`, and be builder-made (no literals of its own, src/db/pg-call.ts).
 */
export function valueAtCommit(db: Db, take: (setting: string) => Runnable): string | undefined {
  const deferred = open.get(db);
  if (!deferred || !hasServerFunctions(db)) return undefined;
  const setting = `supplyline.commit_value_${deferred.values.length}`;
  const placeholder = `pending_${randomBytes(16).toString('hex')}`;
  deferred.values.push({ placeholder, setting, take: compiledOf(db, take(setting)) });
  return placeholder;
}

/** Matches any of `placeholders` wherever a text holds one (they are `pending_` and hex digits). */
export const placeholderPattern = (placeholders: string[]) => new RegExp(placeholders.join('|'), 'g');

/** The write's commit values asked for so far. */
export const commitValuesOf = (db: Db): CommitValue[] => open.get(db)?.values ?? [];

/**
 * `text` (an expression) with each placeholder of `values` replaced by its taken text, for a
 * statement of the commit (`commit_value`, migration 0026, raises when a text was not taken).
 */
export function filledIn(text: RawBuilder<string>, values: CommitValue[]): RawBuilder<string> {
  return values.reduce((t, v) => sql<string>`replace(${t}, ${v.placeholder}, commit_value(${v.setting}))`, text);
}

/**
 * Puts each taken text where its placeholder stands in `value`, a write's outcome, wherever a
 * string holds it (as the commit does in events and stored replays): in place in objects and
 * arrays, and as the result for a string.
 */
export function fillIn<T>(value: T, taken: Map<string, string>): T {
  if (taken.size === 0) return value;
  const pattern = placeholderPattern([...taken.keys()]);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(pattern, (p) => taken.get(p)!);
    if (v !== null && typeof v === 'object') {
      const record = v as Record<string, unknown>;
      for (const key of Object.keys(record)) record[key] = walk(record[key]);
    }
    return v;
  };
  return walk(value) as T;
}

/**
 * Runs `query` at the end of the write (see above) when `db` is a write's transaction, otherwise
 * now: a rebuild, a migration or a test that calls a repository outside the write runner.
 */
export async function deferToCommit(db: Db, query: Runnable): Promise<void> {
  const compiled = compiledOf(db, query);
  const deferred = open.get(db);
  if (deferred) deferred.statements.push(compiled);
  else await db.executeQuery(compiled);
}

/** Runs deferred statements one after another (SQLite, and a write that has no events). */
export async function runDeferred(db: Db, statements: CompiledQuery[]): Promise<void> {
  for (const statement of statements) await db.executeQuery(statement);
}
