import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/types.ts';
import { createProgress } from '../demo/progress.ts';
import { CLI, type WriteRunner } from '../write/runner.ts';
import { findImport, resultsAfter, type Counts } from './repository.ts';
import { receiveImport } from './service.ts';
import { createImportWorker } from './worker.ts';

/** How many failed lines the summary names; the rest are in the results. */
const FAILED_SHOWN = 10;

export interface ImportCommand {
  businessId: string;
  file: string;
  dryRun: boolean;
  stopOnError: boolean;
  maxBytes: number;
  leaseMs: number;
  /** The receipt's time, as the API's route takes it. */
  clock?: () => number;
}

/**
 * `supplyline import FILE --business ID`: receives the file as the API would, then applies it in
 * this process with a progress bar (a running server may take part; each line still applies once),
 * and prints a summary. Resolves to whether every line succeeded.
 */
export async function runImportCommand(
  db: Db,
  writes: WriteRunner,
  command: ImportCommand,
  out: (...lines: string[]) => void,
): Promise<boolean> {
  const size = (await stat(command.file)).size;
  process.stderr.write(`Reading ${command.file} (${size.toLocaleString('en')} bytes)...\n`);
  const { imp } = await receiveImport(db, {
    businessId: command.businessId,
    actorId: CLI.id,
    scopes: null,
    idempotencyKey: null,
    options: { dryRun: command.dryRun, onError: command.stopOnError ? 'stop' : 'continue' },
    body: createReadStream(command.file),
    now: new Date((command.clock ?? Date.now)()).toISOString(),
    maxBytes: command.maxBytes,
  });
  const worker = createImportWorker({
    db,
    writes,
    clock: Date.now,
    concurrency: 1,
    leaseMs: command.leaseMs,
    only: imp.id,
    log: { warn: (details, message) => process.stderr.write(`${message} ${JSON.stringify(details)}\n`) },
  });
  const progress = createProgress('lines', imp.total_lines);
  worker.start();
  let row = imp;
  try {
    while (row.state !== 'COMPLETED' && row.state !== 'STOPPED') {
      await sleep(200);
      row = (await findImport(db, command.businessId, imp.id))!;
      progress.update(row.lines_done);
    }
  } finally {
    await worker.stop();
  }
  progress.finish();
  const counts = JSON.parse(row.counts) as Counts;
  const failed = counts.failed > 0 ? await failedLines(db, imp.id) : [];
  out(
    `Import ${imp.id} ${row.state === 'STOPPED' ? 'stopped at its first failed line' : 'completed'}` +
      `${command.dryRun ? ' (a dry run: nothing was written)' : ''}: ` +
      `${counts.created} created, ${counts.updated} updated, ${counts.unchanged} unchanged, ` +
      `${counts.failed} failed, of ${row.total_lines} lines.`,
    ...failed,
    ...(counts.failed > failed.length ? [`  … and ${counts.failed - failed.length} more`] : []),
    `Each line's result: GET /api/v1/imports/${imp.id}/results (kept 30 days).`,
  );
  return counts.failed === 0 && row.state === 'COMPLETED';
}

async function failedLines(db: Db, importId: string): Promise<string[]> {
  const shown: string[] = [];
  for (let after = 0; shown.length < FAILED_SHOWN; ) {
    const rows = await resultsAfter(db, importId, after, 1000);
    if (rows.length === 0) break;
    for (const r of rows.filter((x) => x.outcome === 'failed').slice(0, FAILED_SHOWN - shown.length)) {
      const { error } = JSON.parse(r.detail ?? '{}') as {
        error?: { message: string; fieldErrors?: Record<string, string> };
      };
      const fields = error?.fieldErrors
        ? ` (${Object.entries(error.fieldErrors)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')})`
        : '';
      shown.push(`  line ${r.line}${r.ref ? ` (${r.ref})` : ''}: ${error?.message ?? 'failed'}${fields}`);
    }
    after = rows[rows.length - 1].line;
  }
  return shown;
}
