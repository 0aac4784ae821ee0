import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { chooseSqliteDriver, type SqliteDatabase } from './sqlite-driver.ts';

/** SQLite's own default: the committing connection checkpoints once the WAL holds this many pages. */
export const AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointerOptions {
  /** How often the thread checkpoints while the WAL grows. */
  intervalMs?: number;
  /** The WAL size, in pages, from which the WAL is started again. */
  restartPages?: number;
  /** Told when the thread fails and the main connection checkpoints by itself again. */
  onError?: (error: Error) => void;
}

export interface Checkpointer {
  /** Resolves once the thread has its connection and the main one has stopped checkpointing. */
  readonly ready: Promise<boolean>;
  /** After a commit, when the thread asked: copies the pages left, so the next transaction restarts the WAL. */
  afterCommit(): void;
  /** Stops the thread; the main connection checkpoints on its own again. */
  close(): Promise<void>;
}

/*
 * Plain script text, so it runs the same from the bundle and from sources. A PASSIVE checkpoint
 * holds up neither writer nor readers, but the WAL only restarts when a write begins with every
 * page copied, which another thread can hardly time; so past `restartPages` the thread asks the
 * main connection to finish between two transactions (afterCommit).
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
    // Pages arrived during this pass: come back soon.
    if (checkpointed < log) next = Math.max(5, next / 10);
  } catch (error) {
    // Busy is a result flag, not an error; after ten I/O errors in a row the thread stops and the
    // main connection checkpoints (and reports) by itself again.
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
 * Checkpoints a SQLite file's WAL on its own thread, so commits do not pay for copying and syncing
 * (docs/performance.md). If the thread cannot start, or stops, the main connection checkpoints again.
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
      // Closed before ready: close() waits for the exit, so keep the thread referenced.
      if (stopped || !main.open) return resolve(false);
      main.pragma('wal_autocheckpoint = 0');
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
        // The write has committed: a failed checkpoint must not fail it. The next commit tries again.
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
