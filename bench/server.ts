import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// A benchmark started from the test runner must not pass its marker on to the children.
const { NODE_TEST_CONTEXT: _ignored, ...baseEnv } = process.env;

export interface Credentials {
  businessId: string;
  apiKey: string;
}

/** Builds dist/ as `npm start` does, so that the benchmark measures what ships. */
export function buildDist(): void {
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
}

/** Runs `cli demo --json` (dist/cli.js) on the database and returns the new business's credentials. */
export function runDemo(databaseUrl: string, orders: number): Promise<Credentials & { log: string }> {
  const child = spawn(
    process.execPath,
    ['--enable-source-maps', 'dist/cli.js', 'demo', '--orders', String(orders), '--json'],
    {
      env: { ...baseEnv, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
    process.stderr.write(d);
  });
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`demo failed (${code}):\n${err}`));
      const last = out.trim().split('\n').at(-1)!;
      resolve({ ...(JSON.parse(last) as Credentials), log: err });
    });
  });
}

export interface Server {
  base: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * `npm start`'s command from package.json (this checkout's, or the one in `root`), for a bundle in
 * `outdir`: the environment it sets (`exec env NAME=VALUE ... node`) and node's arguments, so that
 * whatever runs the bundle runs it with the same settings (the memory ones of
 * docs/decisions/0048-memory-budget.md).
 */
export function startCommand(outdir = 'dist', root?: string): { env: Record<string, string>; args: string[] } {
  const file = root === undefined ? new URL('../package.json', import.meta.url) : join(root, 'package.json');
  const { scripts } = JSON.parse(readFileSync(file, 'utf8')) as {
    scripts: Record<string, string>;
  };
  const words = scripts.start.replaceAll('dist/', `${outdir}/`).split(/\s+/);
  if (words[0] === 'exec') words.shift();
  const env: Record<string, string> = {};
  if (words[0] === 'env') {
    words.shift();
    while (/^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
      const [name, ...value] = words.shift()!.split('=');
      env[name] = value.join('=');
    }
  }
  if (words.shift() !== 'node') throw new Error(`npm start does not run node: ${scripts.start}`);
  return { env, args: words };
}

/**
 * The server as `npm start` runs it (dist/server.js, with its flags and settings), as a child process, on a free port, rate
 * limits off, warnings only; with `profileDir`, it writes a V8 CPU profile there when it stops; with `root`, the build
 * of that checkout, as its own `npm start` runs it (bench/ab.ts).
 */
export function startServer(
  databaseUrl: string,
  profileDir?: string,
  env: Record<string, string> = {},
  root?: string,
): Promise<Server> {
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const start = startCommand('dist', root);
  const child = spawn(process.execPath, [...profile, ...start.args], {
    cwd: root,
    // Webhooks go to a receiver on loopback (bench/webhooks.ts).
    env: {
      ...baseEnv,
      ...start.env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      RATE_LIMIT_RPS: '0',
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'on',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000);
    child.stdout!.on('data', () => {
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ base: m[1], pid: child.pid!, child, stop });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}:\n${out}`));
    });
  });
}

/** Samples a process's resident set size (VmRSS) until stopped; returns the largest, in MB. */
export function sampleRss(pid: number, everyMs = 200): () => number {
  let max = 0;
  const read = () => {
    try {
      const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
      if (m) max = Math.max(max, Number(m[1]) / 1024);
    } catch {
      /* the process is gone, or this is not Linux */
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return () => {
    clearInterval(timer);
    read();
    return Math.round(max);
  };
}

/** CPU time (user + system, ms) a process has used, from /proc; 0 where that is not there. */
function cpuMs(pid: number | string): number {
  try {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime: clock ticks of 10 ms
  } catch {
    return 0;
  }
}

/** The CPU time each `postgres` process on this machine has used (the database beside the server), ms by pid. */
function databaseCpuMs(): Map<string, number> {
  const used = new Map<string, number>();
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') used.set(pid, cpuMs(pid));
      } catch {
        /* gone in between */
      }
    }
  } catch {
    /* not Linux */
  }
  return used;
}

/**
 * The database's CPU time between two readings: each process's own, from its first reading (or its
 * start, when it began in between). A process that ended in between is left out: summing the totals
 * instead made the difference negative when a busy connection closed.
 */
function databaseCpuSince(before: Map<string, number>): number {
  let total = 0;
  for (const [pid, ms] of databaseCpuMs()) total += ms - Math.min(before.get(pid) ?? 0, ms);
  return total;
}

/**
 * CPU time used from now to the call of the function returned: the server's own and the
 * database's (every `postgres` process on the machine; 0 for SQLite, which runs inside the
 * server). Divided by the requests answered, it is a request's cost, steadier than req/s on a
 * shared machine, where what the other tenants take shows in req/s but not here.
 */
export function sampleCpu(pid: number): () => { serverMs: number; databaseMs: number } {
  const server = cpuMs(pid);
  const database = databaseCpuMs();
  return () => ({ serverMs: cpuMs(pid) - server, databaseMs: databaseCpuSince(database) });
}

/** The server's waits on the primary and statements sent so far (its /metrics), each null where it has no such counter (SQLite, an older build). */
export async function databaseCounts(base: string): Promise<{ trips: number | null; statements: number | null }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const count = (name: string) => {
    const found = new RegExp(`^${name} (\\d+)`, 'm').exec(text);
    return found ? Number(found[1]) : null;
  };
  return { trips: count('supplyline_db_round_trips_total'), statements: count('supplyline_db_statements_total') };
}

/** Each counter's growth between two readings, per request; null where a reading has no such counter. */
export function countsPerRequest(
  before: Awaited<ReturnType<typeof databaseCounts>>,
  after: Awaited<ReturnType<typeof databaseCounts>>,
  requests: number,
): { trips: number | null; statements: number | null } {
  const per = (k: 'trips' | 'statements') =>
    before[k] === null || after[k] === null ? null : (after[k]! - before[k]!) / Math.max(1, requests);
  return { trips: per('trips'), statements: per('statements') };
}
