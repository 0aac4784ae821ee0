import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runLoad, warmUp } from './load.ts';
import type { Scenario } from './scenarios.ts';
import { sampleCpu, startServer, type Server } from './server.ts';

/**
 * What tracing costs (issue 50: at most 5 % of throughput at 10 % sampling). Two servers run the
 * bundle as `npm start` does, on the same database at the same time: one untraced, one sampling
 * `ratio` of its requests (`parentbased_traceidratio`) and exporting them to an OTLP/HTTP receiver
 * in a process of its own. For each scenario they take turns, `rounds` times, alternating which
 * goes first, so that both are measured in the same minutes of a shared machine; a single pair of
 * runs says little there. A row gives the mean req/s of each side, the change of the means, the
 * median of the rounds' paired ratios (less moved by one bad round), and the server's CPU per
 * request on each side.
 *
 * With `floor`, the second server traces nothing: it only enters an AsyncLocalStorage when it
 * starts (bench/async-context.mjs), as every tracer's context manager on Node does. On Node 20 that
 * turns on a hook for every promise the process makes, so its row is the least any tracing costs
 * there; Node 24 keeps the context in V8, at no cost per promise.
 */
export interface TracingRow {
  scenario: string;
  untraced: { requestsPerSecond: number; cpuUs: number };
  traced: { requestsPerSecond: number; cpuUs: number };
  /** The traced side's change, as a fraction: of the means, and the median of the rounds' ratios. */
  change: { means: number; medianPair: number };
}

export interface TracingMeasures {
  ratio: number;
  floor: boolean;
  rounds: number;
  rows: TracingRow[];
  exportedKiB: number;
}

/**
 * An OTLP/HTTP receiver that takes every export and counts its bytes, in a process of its own, so
 * that taking the traced side's spans does not slow the load generator in this one.
 */
const SINK = `let bytes = 0;
const server = require('node:http').createServer((req, res) => {
  req.on('data', (chunk) => { bytes += chunk.length; });
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
}).listen(0, '127.0.0.1', () => console.log(server.address().port));
process.on('SIGTERM', () => { console.log(bytes); process.exit(0); });`;

export async function startOtlpSink(): Promise<{ url: string; close(): Promise<number> }> {
  const child = spawn(process.execPath, ['-e', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  child.stdout.on('data', (d) => lines.push(...String(d).split('\n').filter(Boolean)));
  while (lines.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  return {
    url: `http://127.0.0.1:${lines[0]}`,
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve(Number(lines[1] ?? 0)));
        child.kill('SIGTERM');
      }),
  };
}

/** The variables that start tracing at `ratio` into `endpoint`, and those that keep it off whatever the environment says. */
export function tracingEnv(endpoint: string, ratio: number): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: String(ratio),
    OTEL_SERVICE_NAME: 'supplyline-bench',
  };
}
const UNTRACED = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
const ASYNC_CONTEXT_ONLY = {
  ...UNTRACED,
  NODE_OPTIONS: `--import=${fileURLToPath(new URL('./async-context.mjs', import.meta.url))}`,
};

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function measureTracing(
  databaseUrl: string,
  scenarios: Array<Pick<Scenario, 'name' | 'requests'>>,
  options: {
    duration: number;
    connections: number;
    rounds: number;
    ratio: number;
    floor?: boolean;
    onRound?: (line: string) => void;
  },
): Promise<TracingMeasures> {
  const sides = ['untraced', options.floor ? 'context only' : 'traced'];
  const sink = await startOtlpSink();
  const servers: Server[] = [];
  const rows: TracingRow[] = [];
  let exportedBytes = 0;
  try {
    servers.push(
      await startServer(databaseUrl, undefined, UNTRACED),
      await startServer(
        databaseUrl,
        undefined,
        options.floor ? ASYNC_CONTEXT_ONLY : tracingEnv(sink.url, options.ratio),
      ),
    );
    for (const scenario of scenarios) {
      const runs = servers.map(() => [] as Array<{ rps: number; cpuUs: number }>);
      for (let round = 0; round < options.rounds; round++) {
        for (const side of round % 2 === 0 ? [0, 1] : [1, 0]) {
          const server = servers[side];
          await warmUp(server.base, scenario.requests, options.connections);
          const stop = sampleCpu(server.pid);
          const result = await runLoad(server.base, scenario.requests, options);
          const cpu = stop();
          if (result.errors > 0)
            throw new Error(
              `${scenario.name}, ${sides[side]}: ${result.errors} errors ${JSON.stringify(result.statusCodes)}`,
            );
          runs[side].push({
            rps: result.requestsPerSecond,
            cpuUs: Math.round((cpu.serverMs * 1000) / Math.max(1, result.requests)),
          });
        }
        options.onRound?.(
          `tracing ${scenario.name}, round ${round + 1}: untraced ${runs[0].at(-1)!.rps} req/s, ${sides[1]} ${runs[1].at(-1)!.rps} req/s`,
        );
      }
      const mean = (side: number, k: 'rps' | 'cpuUs') =>
        Math.round(runs[side].reduce((t, r) => t + r[k], 0) / runs[side].length);
      rows.push({
        scenario: scenario.name,
        untraced: { requestsPerSecond: mean(0, 'rps'), cpuUs: mean(0, 'cpuUs') },
        traced: { requestsPerSecond: mean(1, 'rps'), cpuUs: mean(1, 'cpuUs') },
        change: {
          means: mean(1, 'rps') / mean(0, 'rps') - 1,
          medianPair: median(runs[1].map((r, i) => r.rps / runs[0][i].rps)) - 1,
        },
      });
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    exportedBytes = await sink.close();
  }
  return {
    ratio: options.ratio,
    floor: options.floor === true,
    rounds: options.rounds,
    rows,
    exportedKiB: Math.round(exportedBytes / 1024),
  };
}

const percent = (fraction: number) => `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %`;

export function tracingTable(m: TracingMeasures): string {
  const lines = [
    m.floor
      ? `An AsyncLocalStorage entered, and no tracing, against neither (the floor of tracing on Node ${process.versions.node}), ${m.rounds} alternating rounds per scenario:`
      : `Tracing at ${m.ratio * 100} % sampling against none, ${m.rounds} alternating rounds per scenario:`,
    `| scenario | untraced req/s | ${m.floor ? 'context only' : 'traced'} req/s | change (means) | change (median pair) | server CPU µs/req |`,
    '|---|---:|---:|---:|---:|---:|',
    ...m.rows.map(
      (r) =>
        `| ${r.scenario} | ${r.untraced.requestsPerSecond} | ${r.traced.requestsPerSecond} | ${percent(r.change.means)} | ${percent(r.change.medianPair)} | ${r.untraced.cpuUs} → ${r.traced.cpuUs} |`,
    ),
    `The OTLP receiver took ${m.exportedKiB.toLocaleString('en')} KiB of traces.`,
  ];
  return lines.join('\n');
}
