import type pg from 'pg';
import { asReplicaLost, isDatabaseUnavailable } from '../errors.ts';

/** What a watched client tells of a failure for want of its replica (`Replica.lost`). */
export interface Watcher {
  lost(error: unknown): void;
}

const watching = new WeakSet<pg.PoolClient>();
/** Where each client's lost statement runs again: its latest lender's (a pooled client serves reads and exports in turn). */
const rerun = new WeakMap<pg.PoolClient, (args: unknown[]) => Promise<unknown>>();

/**
 * A read-only session on a standby meets these only when replay cancels it (a conflict with
 * recovery, whatever the server's language), or drops its database: never for its own doing.
 */
const REPLAY_CONFLICTS = new Set(['40001', '40P01', '57P04']);

const lostReplica = (error: unknown) =>
  isDatabaseUnavailable(error) || REPLAY_CONFLICTS.has(String((error as { code?: unknown } | null)?.code));

/**
 * A replica's client whose failures for want of the replica (its connection lost, the server shut
 * down, a statement cancelled by replay) take the replica out at once, and the reads after it go to
 * the primary until a probe puts it back. The statement that met the failure runs again on the
 * primary (`onPrimary`), which has everything the replica had: a read statement may run twice. In a
 * transaction (an export's snapshot) it cannot, as its snapshot stays on the replica: the read fails
 * there with 503 and Retry-After.
 */
export function watched(
  client: pg.PoolClient,
  replica: Watcher,
  onPrimary: (args: unknown[]) => Promise<unknown>,
): pg.PoolClient {
  rerun.set(client, onPrimary);
  if (watching.has(client)) return client;
  watching.add(client);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  /** BEGINs sent whose answer has not come: the server's status does not say so yet. */
  let opening = 0;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    const text = typeof args[0] === 'string' ? args[0] : '';
    const opens = /^\s*(begin|start\s+transaction)\b/i.test(text);
    // In a transaction, as the server last said (a savepoint's rollback leaves it open), or about to be.
    const once = opens || opening > 0 || client.getTransactionStatus() !== 'I';
    if (opens) opening++;
    const result = query(...args);
    // A promise of the answer is watched; anything else (a cursor) is handed back as it is.
    if (!(result instanceof Promise)) return result;
    return result.then(
      (answer: unknown) => {
        if (opens) opening--;
        return answer;
      },
      (error: unknown) => {
        if (opens) opening--;
        if (!lostReplica(error)) throw error;
        replica.lost(error);
        if (once) throw asReplicaLost(error);
        return rerun.get(client)!(args);
      },
    );
  };
  return client;
}
