import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createJobs } from '../../src/jobs.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `done()` holds, at most 5 s: timers are late on a busy machine, never early. */
async function until(done: () => boolean) {
  for (let i = 0; i < 500 && !done(); i++) await sleep(10);
}

describe('the jobs registry', () => {
  it('runs each job on its interval from start, logs a failed run and runs it again, and stops on close', async () => {
    const warnings: Array<{ job: string; message: string }> = [];
    const jobs = createJobs({ warn: (details, message) => warnings.push({ job: details.job, message }) });
    let runs = 0;
    let failures = 0;
    jobs.add({
      name: 'counter',
      everyMs: 20,
      run: async () => {
        runs++;
      },
    });
    jobs.add({
      name: 'flaky',
      everyMs: 20,
      run: async () => {
        failures++;
        throw new Error('database away');
      },
    });
    await sleep(60);
    assert.equal(runs, 0, 'nothing runs before start');
    jobs.start();
    await until(() => runs >= 3 && failures >= 3 && warnings.length >= 3);
    assert.ok(runs >= 3, `${runs} runs`);
    assert.ok(failures >= 3, 'a failing job keeps its schedule');
    assert.ok(warnings.length >= 3 && warnings.every((w) => w.job === 'flaky' && /flaky failed/.test(w.message)));
    await jobs.stop();
    const stopped = runs;
    await sleep(80);
    assert.equal(runs, stopped, 'no run after stop');
  });

  it('never overlaps two runs of one job, and stop waits for the run in progress', async () => {
    const jobs = createJobs({ warn: () => {} });
    let active = 0;
    let most = 0;
    let finished = 0;
    jobs.add({
      name: 'slow',
      everyMs: 10,
      run: async () => {
        active++;
        most = Math.max(most, active);
        await sleep(55);
        active--;
        finished++;
      },
    });
    jobs.start();
    await until(() => finished >= 2);
    await sleep(30);
    await jobs.stop();
    assert.equal(most, 1);
    assert.equal(active, 0, 'stop waited for the run in progress');
    assert.ok(finished >= 2);
  });
});

describe('the jobs registry and its workers', () => {
  it('starts its workers with the jobs and stops them, awaited, with the jobs', async () => {
    const jobs = createJobs({ warn: () => {} });
    const seen: string[] = [];
    let release = () => {};
    jobs.addWorker({
      name: 'queue',
      start: () => seen.push('start'),
      stop: () =>
        new Promise<void>((resolve) => {
          seen.push('stopping');
          release = () => {
            seen.push('stopped');
            resolve();
          };
        }),
    });
    assert.deepEqual(seen, [], 'nothing starts before start');
    jobs.start();
    jobs.start();
    assert.deepEqual(seen, ['start'], 'started once');
    const stopping = jobs.stop();
    await sleep(5);
    assert.deepEqual(seen, ['start', 'stopping'], 'stop waits for the worker');
    release();
    await stopping;
    assert.deepEqual(seen, ['start', 'stopping', 'stopped']);
    assert.throws(() => jobs.addWorker({ name: 'late', start() {}, stop: async () => {} }), /before start/);
  });
});
