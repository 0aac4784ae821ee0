import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { chooseSqliteDriver, type SqliteDatabase } from './sqlite-driver.ts';

/** SQLite's own default: the committing connection checkpoints once the WAL holds this many pages. */
export const AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointerOptions {
  /** How often the thread checkpoints while the WAL is growing (default 100 ms). */
  intervalMs?: number;
  /** The WAL size, in pages, from which the WAL is started again (default 4096: 16 MB of 4 kB pages). */
  restartPages?: number;
  /** Told when the thread fails and the main connection checkpoints by itself again. */
  onError?: (error: Error) => void;
}

export interface Checkpointer {
  /** Resolves once the thread has its connection and the main one has stopped checkpointing. */
  readonly ready: Promise<boolean>;
  /**
   * Called by the main connection's driver right after a commit: when the thread asked for it,
   * copies the few pages written since its last pass, so that the next transaction starts the WAL
   * again from its beginning.
   */
  afterCommit(): void;
  /** Stops the thread; the main connection checkpoints on its own again. */
  close(): Promise<void>;
}

/*
 * Plain script text, so that it runs the same from the bundle and from sources (as the demo's
 * deflate worker). A PASSIVE checkpoint copies what it can and syncs the file, holding up neither
 * the writer nor any reader. The WAL restarts from its beginning only when a write transaction
 * begins with every page copied, which another thread can hardly time: under steady writes the WAL
 * grew by all that was written. So once it holds `restartPages`, the thread asks the main
 * connection to finish the job between two of its transactions (afterCommit).
 */
const SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 0');
db.pragma('synchronous = NORMAL');
let timer;
let failures = 0;
const pass = () => {
  let next = workerData.intervalMs;
  try {
    const [{ log, checkpointed }] = db.pragma('wal_checkpoint(PASSIVE)');
    failures = 0;
    if (log >= workerData.restartPages) parentPort.postMessage('restart');
    // Pages arrived while this pass copied: come back soon rather than let the WAL grow.
    if (checkpointed < log) next = Math.max(5, next / 10);
  } catch (error) {
    // Busy is not an error here (it is the result's busy flag); an I/O error is. Ten in a row and
    // the thread stops, so that the main connection checkpoints (and reports) by itself again.
    if (++failures >= 10) throw error;
  }
  timer = setTimeout(pass, next);
};
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
pass();`;

/**
 * Checkpoints a SQLite file's WAL on a thread of its own. By default the connection that commits
 * checkpoints, in that commit, once the WAL holds 1000 pages: on a server, a write every few dozen
 * paid for copying the pages of all of them to the database file and syncing it, which dominated
 * the average commit (docs/performance.md). Here the main connection never
 * checkpoints while the thread runs, except for the short finishing pass; if the thread cannot
 * start, or stops, it checkpoints as before.
 */
export function startCheckpointer(main: SqliteDatabase, file: string, options: CheckpointerOptions = {}): Checkpointer {
  const driver = createRequire(import.meta.url).resolve(chooseSqliteDriver());
  const workerData = {
    driver,
    file,
    intervalMs: options.intervalMs ?? 100,
    restartPages: options.restartPages ?? 4096,
  };
  const worker = new Worker(SCRIPT, {
    eval: true,
    workerData,
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
  });
  let stopped = false;
  let restartDue = false;
  const fallBack = () => {
    if (!stopped && main.open) {
      try {
        main.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      } catch {
        /* the connection is busy or closing: nothing left to hand back to */
      }
    }
    stopped = true;
  };
  worker.on('message', (message) => {
    if (message === 'restart') restartDue = true;
  });
  const ready = new Promise<boolean>((resolve) => {
    worker.once('message', () => {
      // Closed before the thread was ready: close() is waiting for it to exit, so keep it referenced.
      if (stopped || !main.open) return resolve(false);
      main.pragma('wal_autocheckpoint = 0');
      // From here on the thread does not keep the process alive.
      worker.unref();
      resolve(true);
    });
    worker.on('error', (error) => {
      if (!stopped) options.onError?.(error);
      fallBack();
      resolve(false);
    });
    worker.once('exit', () => {
      fallBack();
      resolve(false);
    });
  });
  return {
    ready,
    afterCommit() {
      if (!restartDue || stopped || !main.open) return;
      restartDue = false;
      try {
        main.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // The write has committed: a checkpoint that fails (a full disk, an I/O error) must not
        // report it as failed, as SQLite's own autocheckpoint never did. The next commit tries again.
        restartDue = true;
      }
    },
    async close() {
      if (stopped) return;
      fallBack();
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.ref();
      worker.postMessage('close');
      await exited;
    },
  };
}
