/**
 * Background jobs of a server instance: one registry, started when the app is ready and stopped
 * when it closes, so no timer outlives the app (tests open and close many apps in one process).
 * Every instance runs every job; each job is written to be safe when several instances run it at
 * once (a purge deletes what has expired, whoever gets there first).
 */
export interface Job {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
}

export interface JobLog {
  warn(details: { err: unknown; job: string }, message: string): void;
}

export interface Jobs {
  add(job: Job): void;
  start(): void;
  /** Stops the timers and waits for runs in progress. */
  stop(): Promise<void>;
}

export function createJobs(log: JobLog): Jobs {
  const jobs: Job[] = [];
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
    start() {
      if (started) return;
      started = true;
      for (const job of jobs) {
        const timer = setInterval(() => tick(job), job.everyMs);
        timer.unref();
        timers.push(timer);
      }
    },
    async stop() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      await Promise.all(running.values());
    },
  };
}
