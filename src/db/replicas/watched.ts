import type pg from 'pg';
import { isDatabaseUnavailable } from '../errors.ts';
import { type Replica, UNREACHABLE } from './replica.ts';

const watching = new WeakSet<pg.PoolClient>();

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
  replica: Replica,
  onPrimary: (args: unknown[]) => Promise<unknown>,
): pg.PoolClient {
  if (watching.has(client)) return client;
  watching.add(client);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  let inTransaction = false;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    const text = typeof args[0] === 'string' ? args[0] : '';
    const once = inTransaction || /^\s*(begin|start transaction)\b/i.test(text);
    if (/^\s*(begin|start transaction)\b/i.test(text)) inTransaction = true;
    else if (/^\s*(commit|rollback)\b/i.test(text)) inTransaction = false;
    const result = query(...args);
    // A promise of the answer is watched; anything else (a cursor) is handed back as it is.
    if (!(result instanceof Promise)) return result;
    return result.catch((error: unknown) => {
      if (!isDatabaseUnavailable(error)) throw error;
      replica.takeOut(UNREACHABLE, error);
      if (once) throw error;
      return onPrimary(args);
    });
  };
  return client;
}
