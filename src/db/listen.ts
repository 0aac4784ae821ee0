import pg from 'pg';
import type { Dialect } from './types.ts';

export interface Listener {
  close(): Promise<void>;
}

/**
 * PostgreSQL `LISTEN` on one dedicated connection (not from the pool, which it would hold for
 * ever), handing each notification's payload to `onMessage`. A lost connection is opened again
 * after a second, and `onReconnect` is called, since notifications sent meanwhile are lost: a
 * caller wakes its waiters then, and they read the database themselves.
 */
export function listen(
  url: string,
  channel: string,
  onMessage: (payload: string) => void,
  onReconnect: () => void = () => {},
): Listener {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error('invalid channel name');
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (first: boolean) => {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    c.on('end', () => {
      if (closed || client !== c) return;
      client = null;
      retry = setTimeout(() => void connect(false), 1000);
      retry.unref();
    });
    c.on('notification', (message) => {
      if (message.channel === channel) onMessage(message.payload ?? '');
    });
    try {
      await c.connect();
      if (closed) return void c.end().catch(() => {});
      await c.query(`listen ${channel}`);
      client = c;
      if (!first) onReconnect();
    } catch {
      c.end().catch(() => {});
      if (!closed) {
        retry = setTimeout(() => void connect(false), 1000);
        retry.unref();
      }
    }
  };
  void connect(true);

  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
      client = null;
    },
  };
}

/** A listener where other instances can tell this one (PostgreSQL); none on SQLite, where there are no others. */
export function listenIfShared(
  dialect: Dialect,
  url: string,
  channel: string,
  onMessage: (payload: string) => void,
  onReconnect?: () => void,
): Listener | null {
  return dialect === 'postgres' ? listen(url, channel, onMessage, onReconnect) : null;
}
