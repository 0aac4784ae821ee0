import type pg from 'pg';

/** Statements worth naming: the application's own fixed-shape queries, not DDL or bulk loads. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;
/** An order's few items (15 columns a row) are named; an import batch's bulk statements are not (decision 0067). */
const MAX_PARAMETERS = 128;
/** Distinct statements named, across all connections; each connection parses only those it runs. */
const MAX_NAMES = 500;

type Query = (text: unknown, values?: unknown[]) => Promise<pg.QueryResult>;

/** PostgreSQL's answer to a named statement whose result's columns changed since it was prepared (another instance migrated). */
function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return code === '0A000' && message?.includes('cached plan must not change result type') === true;
}

/**
 * Names each statement the application sends, so every connection parses it once and PostgreSQL's
 * plan cache can reuse a plan (node-postgres sends parameterised queries unnamed). A named
 * `select *` fails with "cached plan must not change result type" after a rolling deploy adds a
 * column: the statement then gets a fresh name, and is retried once outside a transaction. A
 * COMMIT that PostgreSQL answers with ROLLBACK fails here (decision 0053). `roundTrips` counts the
 * statements sent while none was in flight on their connection: the times a process waited on the
 * database (a statement sent behind another travels in its round trip); `statements` counts them all.
 */
export function preparingPool(
  pool: pg.Pool,
  { naming = true } = {},
): { connect(): Promise<pg.PoolClient>; end(): Promise<void>; roundTrips(): number; statements(): number } {
  const names = new Map<string, string>();
  let next = 0;
  const nameOf = (text: string, values: readonly unknown[] | undefined): string | undefined => {
    if (!naming) return undefined;
    const count = values?.length ?? 0;
    if (count === 0 || count > MAX_PARAMETERS || !PREPARABLE.test(text)) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMES) {
      name = `supplyline_${next++}`;
      names.set(text, name);
    }
    return name;
  };
  const wrapped = new WeakSet<pg.PoolClient>();
  let roundTrips = 0;
  let statements = 0;

  const wrap = (client: pg.PoolClient) => {
    const query = client.query.bind(client) as Query;
    const run = (text: string, values: unknown[] | undefined) => {
      const name = nameOf(text, values);
      return name === undefined ? query(text, values) : query({ name, text, values });
    };
    /** Statements sent on this client and not yet answered (a pipelining client sends before the last is answered). */
    let inFlight = 0;
    (client as unknown as { query: Query }).query = async (text, values) => {
      if (typeof text !== 'string') return query(text, values);
      // Read before sending: node-postgres reports an error before the status that follows it. A
      // statement sent behind others (a BEGIN not yet answered, say) may be in a transaction already.
      const alone = inFlight === 0 && client.getTransactionStatus() === 'I';
      if (inFlight === 0) roundTrips++;
      statements++;
      inFlight++;
      try {
        const result = await run(text, values);
        // PostgreSQL answers the COMMIT of a transaction that a failed statement aborted with ROLLBACK,
        // not an error: a caller that caught that statement's error and went on must not take it for success.
        if (result.command === 'ROLLBACK' && /^\s*commit\s*$/i.test(text)) {
          throw new Error('The transaction was rolled back: one of its statements failed');
        }
        return result;
      } catch (error) {
        if (!isStalePlan(error)) throw error;
        names.delete(text);
        // An aborted transaction must be retried by its caller; a statement on its own is retried here.
        if (!alone) throw error;
        return run(text, values);
      } finally {
        inFlight--;
      }
    };
  };

  return {
    async connect() {
      const client = await pool.connect();
      if (!wrapped.has(client)) {
        wrap(client);
        wrapped.add(client);
      }
      return client;
    },
    end: () => pool.end(),
    roundTrips: () => roundTrips,
    statements: () => statements,
  };
}
