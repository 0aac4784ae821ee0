import pg from 'pg';
import type { Dialect } from './types.ts';

export interface Listener {
  close(): Promise<void>;
}

/** While the listener cannot connect, it says so again this often. */
const REPORT_AGAIN_MS = 60_000;

/**
 * PostgreSQL `LISTEN` on one dedicated connection (not from the pool, which it would hold for
 * ever), handing each notification's payload to `onMessage`. A lost connection is opened again
 * after a second, and `onReconnect` is called, since notifications sent meanwhile are lost: a
 * caller wakes its waiters then, and they read the database themselves. `onProblem` is told when
 * the connection is lost or cannot be made (and again each minute while that lasts), and when it
 * is back: meanwhile nothing another instance commits wakes this one's long polls.
 */
export function listen(
  url: string,
  channel: string,
  onMessage: (payload: string) => void,
  onReconnect: () => void = () => {},
  onProblem: (message: string) => void = () => {},
): Listener {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error('invalid channel name');
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  /** When the listener last said it was not listening; null while it listens. */
  let reported: number | null = null;

  const again = () => {
    if (closed) return;
    retry = setTimeout(() => void connect(false), 1000);
    retry.unref();
  };
  const failed = (what: string, error: unknown) => {
    if (reported !== null && Date.now() - reported < REPORT_AGAIN_MS) return;
    reported = Date.now();
    const { code, message } = (error ?? {}) as { code?: string; message?: string };
    onProblem(
      `The listener ${what} (${code ?? message ?? 'no reason given'}): other instances' commits do not wake ` +
        "this instance's long polls or webhook deliveries until it listens again; it tries every second",
    );
  };

  const connect = async (first: boolean) => {
    let c: pg.Client;
    try {
      c = new pg.Client({ connectionString: url });
    } catch (error) {
      return failed('cannot read its database URL', error);
    }
    c.on('error', () => {});
    c.on('end', () => {
      if (closed || client !== c) return;
      client = null;
      failed('lost its connection to PostgreSQL', new Error('the connection ended'));
      again();
    });
    c.on('notification', (message) => {
      if (message.channel === channel) onMessage(message.payload ?? '');
    });
    try {
      await c.connect();
      if (closed) return void c.end().catch(() => {});
      await c.query(`listen ${channel}`);
      client = c;
      if (reported !== null) onProblem('The listener listens again');
      reported = null;
      if (!first) onReconnect();
    } catch (error) {
      c.end().catch(() => {});
      failed('cannot connect to PostgreSQL', error);
      again();
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
  onProblem?: (message: string) => void,
): Listener | null {
  return dialect === 'postgres' ? listen(url, channel, onMessage, onReconnect, onProblem) : null;
}
