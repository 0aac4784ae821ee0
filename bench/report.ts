import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { LoadResult } from './load.ts';

export interface Row extends LoadResult {
  scenario: string;
  kind: string;
  rssMb: number;
  /** CPU per request, µs: the server process's, and the database's (PostgreSQL's processes; 0 on SQLite). */
  cpuUs?: { server: number; database: number };
  /** The machine's 1-minute load average when the scenario started: the machine is shared. */
  loadAverage: number;
  ratioToCeiling?: number;
  /** PostgreSQL writes: against the three-statement plain-SQL floor (bench/floor.ts). */
  ratioToFloor?: number;
  /** PostgreSQL: the round trips a request waited for and the statements it sent (the server's /metrics). */
  perRequest?: { trips: number; statements: number };
}

export interface Report {
  backend: string;
  orders: number;
  duration: number;
  connections: number;
  generation: { seconds: number; ordersPerSecond: number; log: string };
  machine: { cpus: number; model: string; memoryGb: number; node: string; loadAverage: number[] };
  startedAt: string;
  ceiling: LoadResult;
  /** A bare node:http server echoing the patch scenario's bodies: what write ratios are taken against. */
  echoCeiling?: LoadResult;
  /** PostgreSQL: one business's serialized write in plain SQL through pgbench, transactions/s. */
  floor?: import('./floor.ts').Floor;
  rows: Row[];
  /** The event log's readers (bench/events.ts), when measured. */
  events?: import('./events.ts').EventMeasures;
  webhooks?: import('./webhooks.ts').WebhookMeasures;
  lists?: import('./lists.ts').ListMeasures;
  scaleOut?: import('./scaleout.ts').ScaleOutRow[];
  /** Memory under the mixed load (bench/memory.ts), with `--only soak`. */
  soak?: import('./memory.ts').SoakResult;
  /** Untraced against traced at a sampled share (bench/tracing.ts), with `--only tracing`. */
  tracing?: import('./tracing.ts').TracingMeasures;
}

export function machine(loadAverage: number[]) {
  return {
    cpus: cpus().length,
    model: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAverage,
  };
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function formatTable(report: Report): string {
  const header = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'errors',
    'RSS MB',
    'CPU µs/req (server + db)',
    'load',
    'note',
  ];
  const cpu = (r: Row) => (r.cpuUs ? `${fmt(r.cpuUs.server)} + ${fmt(r.cpuUs.database)}` : '');
  const rows = [
    ...report.rows.map((r) => [
      r.scenario,
      fmt(r.requestsPerSecond),
      fmt(r.p50, 1),
      fmt(r.p99, 1),
      fmt(r.errors),
      fmt(r.rssMb),
      cpu(r),
      r.loadAverage.toFixed(1),
      [
        r.ratioToCeiling === undefined
          ? ''
          : `${r.ratioToCeiling.toFixed(3)} × ${r.kind === 'write' ? 'echo ceiling' : 'ceiling'}`,
        r.ratioToFloor === undefined ? '' : `${r.ratioToFloor.toFixed(2)} × floor`,
        r.perRequest === undefined
          ? ''
          : `${r.perRequest.trips.toFixed(1)} round trips, ${r.perRequest.statements.toFixed(1)} statements`,
      ]
        .filter(Boolean)
        .join(', '),
    ]),
    [
      'ceiling (bare node:http, same bytes)',
      fmt(report.ceiling.requestsPerSecond),
      fmt(report.ceiling.p50, 1),
      fmt(report.ceiling.p99, 1),
      fmt(report.ceiling.errors),
      '',
      '',
      '',
      '',
    ],
    ...(report.echoCeiling
      ? [
          [
            'echo ceiling (bare node:http, patch bodies)',
            fmt(report.echoCeiling.requestsPerSecond),
            fmt(report.echoCeiling.p50, 1),
            fmt(report.echoCeiling.p99, 1),
            fmt(report.echoCeiling.errors),
            '',
            '',
            '',
            '',
          ],
        ]
      : []),
    ...(report.floor
      ? [
          ['floor: pgbench lock, UPDATE, INSERT (3 statements)', fmt(report.floor.threeStatements)],
          ['floor: the same as one statement (CTE)', fmt(report.floor.oneStatement)],
          ...(report.floor.driver
            ? [
                [
                  `floor: node-postgres, PATCH's 9 statements awaited (${fmt(report.floor.driver.awaited.cpuMicros)} µs CPU)`,
                  fmt(report.floor.driver.awaited.writesPerSecond),
                ],
                [
                  `floor: the same pipelined (${fmt(report.floor.driver.pipelined.cpuMicros)} µs CPU)`,
                  fmt(report.floor.driver.pipelined.writesPerSecond),
                ],
              ]
            : []),
        ].map((r) => [...r, '', '', '', '', '', '', ''])
      : []),
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 || i === 8 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((w, i) => (i === 0 || i === 8 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

/** bench/results/<backend>-<orders>-<timestamp>.json */
export function saveReport(report: Report): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${report.backend}-${report.orders}-${report.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
