/**
 * One registry of an instance's background work, periodic jobs and workers, started when the app
 * is ready and awaited when it closes, so nothing outlives it. Every instance runs all of it; each
 * piece is safe to run on several at once.
 */
export interface Job {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
}

/** Long-running work with its own schedule (a queue's claims, a lease). */
export interface Worker {
  name: string;
  start(): void;
  /** Stops taking work and waits for the work under way. */
  stop(): Promise<void>;
}

export interface JobLog {
  warn(details: { err: unknown; job: string }, message: string): void;
}

export interface Jobs {
  add(job: Job): void;
  addWorker(worker: Worker): void;
  start(): void;
  /** Stops the timers and the workers, and waits for runs in progress. */
  stop(): Promise<void>;
}

export function createJobs(log: JobLog): Jobs {
  const jobs: Job[] = [];
  const workers: Worker[] = [];
  const timers: NodeJS.Timeout[] = [];
  const running = new Map<string, Promise<void>>();
  let started = false;

  const tick = (job: Job) => {
    // A run still going when the next is due is not started twice.
    if (running.has(job.name)) return;
    const run = job
      .run()
      .then(
        () => {},
        (err) =>
          log.warn({ err, job: job.name }, `background job ${job.name} failed; it runs again in ${job.everyMs} ms`),
      )
      .finally(() => running.delete(job.name));
    running.set(job.name, run);
  };

  return {
    add(job) {
      if (started) throw new Error('add jobs before start');
      jobs.push(job);
    },
    addWorker(worker) {
      if (started) throw new Error('add workers before start');
      workers.push(worker);
    },
    start() {
      if (started) return;
      started = true;
      for (const job of jobs) {
        const timer = setInterval(() => tick(job), job.everyMs);
        timer.unref();
        timers.push(timer);
      }
      for (const worker of workers) worker.start();
    },
    async stop() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      await Promise.all([...workers.map((w) => w.stop()), ...running.values()]);
    },
  };
}
