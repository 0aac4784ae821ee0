/**
 * Issue 66's bar for the simulated buyer at full length: 60 orders a minute for 5 minutes on
 * PostgreSQL with three server processes, started as the console starts one, the instance driving it
 * killed midway (another takes the run over once its lease passes); every order made once, in the
 * sandbox's feed and delivered to its webhook endpoint, nothing in the live business's feed
 * (test/reliability/simulation-check.ts checks it all; test/reliability/simulation.test.ts runs it short).
 * `npx tsx bench/simulation.ts [--orders-per-minute 60] [--minutes 5] [--handover kill|stop]`.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startServer } from '../test/reliability/helpers.ts';
import { checkSimulation } from '../test/reliability/simulation-check.ts';
import { createBenchDatabase } from './database.ts';
import { machine } from './report.ts';

const { values } = parseArgs({
  options: {
    'orders-per-minute': { type: 'string', default: '60' },
    minutes: { type: 'string', default: '5' },
    handover: { type: 'string', default: 'kill' },
  },
});
const database = await createBenchDatabase('postgres');
try {
  const before = loadavg();
  const outcome = await checkSimulation(database.url, {
    ordersPerMinute: Number(values['orders-per-minute']),
    minutes: Number(values.minutes),
    handover: values.handover === 'stop' ? 'stop' : 'kill',
    log: (line) => console.error(line),
    // A busy machine may take more than a minute to start three servers from source.
    start: (env) => startServer(env, 300_000),
  });
  console.log(JSON.stringify({ machine: machine(loadavg()), loadBefore: before, ...outcome }));
  console.log(
    `postgres, 3 instances: ${outcome.orders} orders in ${outcome.seconds.toFixed(1)} s ` +
      `(changed ${outcome.counts.changed}, cancelled ${outcome.counts.cancelled}), each in the feed and delivered ` +
      `(${outcome.delivered} deliveries, the last ${outcome.drainSeconds.toFixed(1)} s after the run ended); ` +
      `live feed untouched; driving instance ${values.handover === 'stop' ? 'stopped' : 'killed'} midway: ${outcome.handedOver}. All checks passed.`,
  );
} finally {
  await database.drop();
}
