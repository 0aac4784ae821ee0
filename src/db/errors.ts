/** Lost connections as node-postgres, a closed SQLite handle or Kysely's driver word them. */
const LOST_CONNECTION = new RegExp(
  '^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|' +
    'Cannot use a pool after calling end|The database connection is not open|database is locked|' +
    'driver has already been destroyed)',
  'i',
);

/** Errors a replica's client met for want of its replica (src/db/replicas/watched.ts), whatever their code or text. */
const replicaLost = new WeakSet<object>();

/** `error`, answered as an outage (503) wherever it surfaces: the replica's, not the request's. */
export function asReplicaLost<E>(error: E): E {
  if (error !== null && typeof error === 'object') replicaLost.add(error);
  return error;
}

/**
 * Whether the database cannot take the query now (down, restarting, out of connections, locked):
 * an outage, answered 503 with Retry-After, rather than a bug.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  if (replicaLost.has(error)) return true;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : '';
  if (typeof code === 'string') {
    // PostgreSQL: connection exceptions (08), shutdown or start-up (57P01-57P03), out of connections (53300).
    if (/^08[0-9A-Z]{3}$/.test(code) || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
    // A replica's statement cancelled by replay: another try finds the primary or a replica caught up.
    if (code === '40001' && /conflict with recovery/i.test(text)) return true;
    if (
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'ETIMEDOUT',
        'EHOSTUNREACH',
        'ENETUNREACH',
        'ENOTFOUND',
        'EAI_AGAIN',
        'EPIPE',
      ].includes(code)
    )
      return true;
    // SQLite: another process holds the lock past busy_timeout, or the file cannot be read or written.
    if (/^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|PROTOCOL)/.test(code)) return true;
  }
  // node-postgres reports lost connections by text without a code; so does a closed SQLite handle or Kysely driver.
  return LOST_CONNECTION.test(text);
}
