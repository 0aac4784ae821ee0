import type { CompiledQuery } from 'kysely';
import type pg from 'pg';
import { literals, writtenOut } from './pg-literals.ts';

/** Statements worth naming: the application's own fixed-shape queries, not DDL or bulk loads. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;
const MAX_PARAMETERS = 32;
/** Distinct statements named, across all connections; each connection parses only those it runs. */
const MAX_NAMES = 500;

type Query = (text: unknown, values?: unknown[]) => Promise<pg.QueryResult>;

/** The text with which runTogether (together.ts) hands this pool the statements to send in one message. */
export const TOGETHER = '/* supplyline: together */';

const NOTHING_COMMITTED = { command: 'COMMIT', rowCount: null, oid: 0, rows: [], fields: [] } as unknown as pg.QueryResult;
const NOT_YET_BEGUN = { command: 'BEGIN', rowCount: null, oid: 0, rows: [], fields: [] } as unknown as pg.QueryResult;
const NOTHING_ROLLED_BACK = { command: 'ROLLBACK', rowCount: null, oid: 0, rows: [], fields: [] } as unknown as pg.QueryResult;

/** Several statements' results as one, whose rows are each statement's rows, in order (as `runTogether` answers). */
const rowsOfEach = (results: pg.QueryResult[]) =>
  ({ command: 'TOGETHER', rowCount: null, oid: 0, fields: [], rows: results.map((r) => r.rows) }) as unknown as pg.QueryResult;

/** node-postgres answers a text of several statements with each one's result: as `rowsOfEach` (pg-call.ts reads them). */
const oneResult = (result: pg.QueryResult | pg.QueryResult[]) => (Array.isArray(result) ? rowsOfEach(result) : result);

/** PostgreSQL's answer to a named statement whose result's columns changed since it was prepared (another instance migrated). */
function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return code === '0A000' && message?.includes('cached plan must not change result type') === true;
}

/**
 * node-postgres sends a query with parameters as an unnamed statement, which PostgreSQL parses
 * and plans again every time. This pool names each statement the application sends (Kysely
 * compiles a query to the same text every time), so every connection parses it once and
 * PostgreSQL's plan cache can reuse a plan (its own rule: a generic plan once it costs no more
 * than the custom ones). Measured on a get-order load: 9.6k -> 14.4k req/s.
 *
 * A named `select *` fails with "cached plan must not change result type" when another instance
 * has since added a column (a rolling deploy that migrates): the statement then gets a fresh
 * name, so every connection prepares it again, and the query is retried once when it was not
 * inside a transaction (an aborted transaction must be retried by its caller).
 *
 * A transaction's BEGIN travels with its first statement, in one round trip instead of two: the
 * BEGIN is held back, and the next statement goes as `begin; execute <name>(<literals>)` by the
 * simple protocol when this connection has already prepared it and its values can be written out
 * (text without NUL, numbers, booleans, null, flat arrays of these), which keeps its plan;
 * otherwise BEGIN is sent first, as before. A transaction that ends before any statement sends
 * nothing at all. `runTogether` (together.ts) sends several statements in one message the same way.
 */
export function preparingPool(pool: pg.Pool, { naming = true } = {}): { connect(): Promise<pg.PoolClient>; end(): Promise<void> } {
  const names = new Map<string, string>();
  let next = 0;
  const nameOf = (text: string, values: readonly unknown[] | undefined): string | undefined => {
    if (!naming) return undefined;
    // Without parameters a text goes as it is (the simple protocol), which lets it hold several statements (pg-call.ts callAndCommit).
    const count = values?.length ?? 0;
    if (count === 0 || count > MAX_PARAMETERS || !PREPARABLE.test(text)) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMES) {
      name = `supplyline_${next++}`;
      names.set(text, name);
    }
    return name;
  };
  /** Each wrapped connection's reset, run at every checkout: a held BEGIN never outlives its checkout. */
  const prepared = new WeakMap<pg.PoolClient, () => void>();

  const wrap = (client: pg.PoolClient) => {
    const query = client.query.bind(client) as Query;
    /** The names this connection has prepared (a statement is parsed on its first run). */
    const parsed = new Set<string>();
    let beginHeld = false;
    const run = async (text: string, values: unknown[] | undefined) => {
      const name = nameOf(text, values);
      if (name === undefined) return oneResult(await query(text, values));
      const result = await query({ name, text, values });
      parsed.add(name);
      return result;
    };
    /**
     * A statement as text for the simple protocol, which takes several in one message: a text
     * without parameters as it is; a named one as `execute name(...)` once this connection has
     * prepared it, which keeps its plan; one that gets no name (too many parameters), when the
     * builder made it (no literals of its own, so every `$n` is a parameter), with its parameters
     * written in. Undefined when it cannot be.
     */
    const statementText = (text: string, values: readonly unknown[]): string | undefined => {
      if (values.length === 0) return text.includes(';') ? undefined : text;
      const written = literals(values);
      if (written === undefined) return undefined;
      const name = nameOf(text, values);
      // A statement that gets a name is prepared by its first run alone, and goes as `execute` after.
      if (name !== undefined) return parsed.has(name) ? `execute ${name}(${written.join(', ')})` : undefined;
      return writtenOut(text, written);
    };
    /** The held BEGIN and `statements` in one message; the statements' results. */
    const sendTogether = async (statements: string[]): Promise<pg.QueryResult[]> => {
      const begin = beginHeld;
      beginHeld = false;
      const result = await query([...(begin ? ['begin'] : []), ...statements].join('; ')) as unknown as pg.QueryResult | pg.QueryResult[];
      const results = Array.isArray(result) ? result : [result];
      return begin ? results.slice(1) : results;
    };
    /** The held BEGIN with the statement, in one message, where it can be written out (a first run of a named one prepares it: BEGIN then goes alone). */
    const beginWith = async (text: string, values: unknown[] | undefined): Promise<pg.QueryResult | undefined> => {
      const statement = statementText(text, values ?? []);
      if (statement === undefined) {
        beginHeld = false;
        await query('begin');
        return undefined;
      }
      const [result] = await sendTogether([statement]);
      return result;
    };
    /** Statements that need no answer from each other, in one message where each can be written out, else one by one. */
    const together = async (statements: CompiledQuery[]): Promise<pg.QueryResult> => {
      const texts = statements.map((q) => statementText(q.sql, q.parameters));
      let results: pg.QueryResult[];
      if (texts.every((t) => t !== undefined)) results = await sendTogether(texts as string[]);
      else {
        results = [];
        for (const q of statements) results.push(await send(q.sql, [...q.parameters]));
      }
      return rowsOfEach(results);
    };
    const send = async (text: string, values: unknown[] | undefined) => {
      if (beginHeld) {
        const result = await beginWith(text, values);
        if (result !== undefined) return result;
      }
      return run(text, values);
    };
    (client as unknown as { query: Query }).query = async (text, values) => {
      if (typeof text !== 'string') {
        if (beginHeld) {
          beginHeld = false;
          await query('begin');
        }
        return query(text, values);
      }
      // Read before sending: node-postgres reports an error before the status that follows it, and a
      // held BEGIN travels in the same message as the statement that fails.
      const inTransaction = beginHeld || client.getTransactionStatus() !== 'I';
      if (text === TOGETHER) {
        const statements = values as CompiledQuery[];
        try {
          return await together(statements);
        } catch (error) {
          if (!isStalePlan(error)) throw error;
          for (const q of statements) names.delete(q.sql);
          if (inTransaction) throw error;
          return together(statements);
        }
      }
      if (text === 'begin' && (values?.length ?? 0) === 0) {
        beginHeld = true;
        return NOT_YET_BEGUN;
      }
      if (beginHeld && (text === 'commit' || text === 'rollback')) {
        // The transaction ran no statement: there is nothing to end.
        beginHeld = false;
        return text === 'commit' ? NOTHING_COMMITTED : NOTHING_ROLLED_BACK;
      }
      // The transaction's last statement committed it already (pg-call.ts callAndCommit): Kysely's COMMIT has nothing left to do.
      if (text === 'commit' && client.getTransactionStatus() === 'I') return NOTHING_COMMITTED;
      try {
        return await send(text, values);
      } catch (error) {
        if (!isStalePlan(error)) throw error;
        names.delete(text);
        // An aborted transaction must be retried by its caller; a statement on its own is retried here.
        if (inTransaction) throw error;
        return run(text, values);
      }
    };
    return () => { beginHeld = false; };
  };

  return {
    async connect() {
      const client = await pool.connect();
      const reset = prepared.get(client);
      if (reset) reset();
      else prepared.set(client, wrap(client));
      return client;
    },
    end: () => pool.end(),
  };
}
