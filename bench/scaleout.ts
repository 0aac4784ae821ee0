import { readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import type autocannon from 'autocannon';
import type { Fixtures } from './fixtures.ts';
import { runLoad, warmUp, type LoadResult } from './load.ts';
import type { Scenario } from './scenarios.ts';
import { startServer, type Server } from './server.ts';

/**
 * Scale-out (issue 21): the same mixed workload against one, two and three server processes on one
 * PostgreSQL database, the connections split evenly between them. What each process and the
 * database used of the CPU meanwhile tells where the bottleneck is.
 */
export interface ScaleOutRow {
  instances: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU seconds per wall second: the servers together, PostgreSQL's processes, and the machine's cores. */
  cpu: { servers: number; postgres: number; cores: number };
}

/** One request each of reads, a list and writes, cycled by every connection. */
export function mixedRequests(scenarios: Scenario[]): autocannon.Request[] {
  const names = [
    'get order (10 items)',
    'list orders (limit 20)',
    'list phase+status',
    'patch order',
    'create order (5 items)',
  ];
  return names.map((name) => scenarios.find((s) => s.name === name)!.requests[0]);
}

const TICKS = 100;

/** CPU seconds (user + system) used so far by the processes whose command line contains `marker`, or by `pids`. */
function cpuSeconds(match: (pid: number, cmdline: string) => boolean): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!match(pid, cmdline)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      /* gone meanwhile */
    }
  }
  return ticks / TICKS;
}

export async function measureScaleOut(
  databaseUrl: string,
  _f: Fixtures,
  requests: autocannon.Request[],
  options: { duration: number; connections: number },
  counts = [1, 2, 3],
): Promise<ScaleOutRow[]> {
  const rows: ScaleOutRow[] = [];
  for (const instances of counts) {
    const servers: Server[] = [];
    try {
      for (let i = 0; i < instances; i++) servers.push(await startServer(databaseUrl));
      const perInstance = Math.max(1, Math.round(options.connections / instances));
      await Promise.all(servers.map((s) => warmUp(s.base, requests, perInstance)));
      const pids = new Set(servers.map((s) => s.pid));
      const serverCpu = () => cpuSeconds((pid) => pids.has(pid));
      const postgresCpu = () => cpuSeconds((_pid, cmdline) => cmdline.startsWith('postgres'));
      const before = { servers: serverCpu(), postgres: postgresCpu(), at: performance.now() };
      const results: LoadResult[] = await Promise.all(
        servers.map((s) => runLoad(s.base, requests, { ...options, connections: perInstance })),
      );
      const wall = (performance.now() - before.at) / 1000;
      const total = results.reduce((sum, r) => sum + r.requestsPerSecond, 0);
      rows.push({
        instances,
        requestsPerSecond: total,
        // Each instance's own percentiles, the worst of them: a client sees whichever it reaches.
        p50: Math.max(...results.map((r) => r.p50)),
        p99: Math.max(...results.map((r) => r.p99)),
        errors: results.reduce((sum, r) => sum + r.errors, 0),
        cpu: {
          servers: Math.round(((serverCpu() - before.servers) / wall) * 100) / 100,
          postgres: Math.round(((postgresCpu() - before.postgres) / wall) * 100) / 100,
          cores: cpus().length,
        },
      });
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }
  return rows;
}
