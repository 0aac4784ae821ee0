import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../db/types.ts';
import { fetchPage, type Page, type Paging } from '../db/list.ts';
import { toIso } from '../lib/time.ts';
import type { ImportChunkTable, ImportResultTable, ImportTable } from './table.ts';
import { insertRows } from '../db/bulk.ts';
import type { Referenced } from './lines.ts';

export type ImportRow = Selectable<ImportTable>;
export type ResultRow = Selectable<ImportResultTable>;

export const IMPORT_NOT_FOUND = 'Import not found';
/** Imports and their results are kept this long after they finish, then purged by the jobs registry. */
export const IMPORT_RETENTION_DAYS = 30;
/** A file whose receipt never finished (its instance died) leaves runs of lines; purged after this. */
const ORPHAN_CHUNK_HOURS = 24;

export type Counts = Record<'created' | 'updated' | 'unchanged' | 'failed', number>;
export const NO_COUNTS: Counts = { created: 0, updated: 0, unchanged: 0, failed: 0 };

export async function insertChunk(
  db: Db,
  chunk: { importId: string; firstLine: number; lineCount: number; data: Buffer; now: string },
): Promise<void> {
  await db
    .insertInto('import_chunks')
    .values({
      import_id: chunk.importId,
      first_line: chunk.firstLine,
      line_count: chunk.lineCount,
      created_at: chunk.now,
      data: chunk.data,
    })
    .execute();
}

export async function deleteChunks(db: Db, importId: string): Promise<void> {
  await db.deleteFrom('import_chunks').where('import_id', '=', importId).execute();
}

export async function insertImport(db: Db, row: Insertable<ImportTable>): Promise<void> {
  await db.insertInto('imports').values(row).execute();
}

export async function findImport(db: Db, businessId: string, id: string): Promise<ImportRow | undefined> {
  return db
    .selectFrom('imports')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function findImportByKey(db: Db, businessId: string, key: string): Promise<ImportRow | undefined> {
  return db
    .selectFrom('imports')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function listImports(
  db: Db,
  businessId: string,
  paging: Paging,
  nowMs: number,
): Promise<Page<ImportView>> {
  return fetchPage(db.selectFrom('imports').selectAll().where('business_id', '=', businessId), paging, async (rows) =>
    rows.map((r) => toImport(r, nowMs)),
  );
}

/**
 * Takes the oldest import no live instance works on (queued, or running under a lease that has
 * passed) for `owner` until `leaseUntil`. The update checks the lease again, so of two instances
 * that chose the same import one gets it.
 */
export async function claimImport(
  db: Db,
  owner: string,
  now: string,
  leaseUntil: string,
  skip: string[],
  only?: string,
): Promise<ImportRow | undefined> {
  const candidate = await db
    .selectFrom('imports')
    .select('id')
    .where('state', 'in', ['QUEUED', 'RUNNING'])
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .$if(skip.length > 0, (q) => q.where('id', 'not in', skip))
    .$if(only !== undefined, (q) => q.where('id', '=', only!))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (!candidate) return undefined;
  return db
    .updateTable('imports')
    .set({
      state: 'RUNNING',
      lease_owner: owner,
      lease_until: leaseUntil,
      started_at: sql<string>`coalesce(started_at, ${now})`,
    })
    .where('id', '=', candidate.id)
    .where('state', 'in', ['QUEUED', 'RUNNING'])
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .returningAll()
    .executeTakeFirst();
}

/**
 * Records that line `line` is done, in the transaction that did it: only while `owner` holds the
 * lease and the line is not done yet. False when it is not so, and the transaction must roll back:
 * that is what makes every line apply exactly once, whichever instance resumes the import.
 */
export async function advance(
  trx: Db,
  imp: { id: string; owner: string },
  line: number,
  set: { counts: Counts; leaseUntil: string; finished?: { state: 'COMPLETED' | 'STOPPED'; at: string } },
): Promise<boolean> {
  const result = await trx
    .updateTable('imports')
    .set({
      lines_done: line,
      counts: JSON.stringify(set.counts),
      ...(set.finished
        ? { state: set.finished.state, finished_at: set.finished.at, lease_owner: null, lease_until: null }
        : { lease_until: set.leaseUntil }),
    })
    .where('id', '=', imp.id)
    .where('lease_owner', '=', imp.owner)
    .where('lines_done', '<', line)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives up this instance's leases (at shutdown), so another instance may resume them at once. */
export async function releaseLeases(db: Db, owner: string): Promise<void> {
  await db
    .updateTable('imports')
    .set({ lease_owner: null, lease_until: null })
    .where('lease_owner', '=', owner)
    .execute();
}

/** The run of lines that holds line `line`, or the first after it. */
export async function chunkAt(
  db: Db,
  importId: string,
  line: number,
): Promise<Selectable<ImportChunkTable> | undefined> {
  const holding = await db
    .selectFrom('import_chunks')
    .selectAll()
    .where('import_id', '=', importId)
    .where('first_line', '<=', line)
    .orderBy('first_line', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (holding && holding.first_line + holding.line_count > line) return holding;
  return db
    .selectFrom('import_chunks')
    .selectAll()
    .where('import_id', '=', importId)
    .where('first_line', '>', line)
    .orderBy('first_line')
    .limit(1)
    .executeTakeFirst();
}

/** A batch's line results, in one statement per thousand. */
export async function insertResults(trx: Db, rows: ImportResultTable[]): Promise<void> {
  await insertRows(
    trx,
    'import_results',
    RESULT_COLUMNS,
    rows.map((r) => RESULT_COLUMNS.map((c) => r[c])),
    {},
    { ahead: true },
  );
}

const RESULT_COLUMNS = ['import_id', 'line', 'ref', 'outcome', 'record_id', 'detail'] as const;

/** The first line with each of `refs` among the import's results. */
export async function findLinesByRef(db: Db, importId: string, refs: string[]): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('import_results')
    .select(['ref', (eb) => eb.fn.min<number>('line').as('line')])
    .where('import_id', '=', importId)
    .where('ref', 'in', refs)
    .groupBy('ref')
    .execute();
  return new Map(rows.map((r) => [r.ref!, Number(r.line)]));
}

export async function findResultByRef(db: Db, importId: string, ref: string): Promise<Referenced | undefined> {
  const row = await db
    .selectFrom('import_results')
    .select(['line', 'outcome', 'record_id', 'detail'])
    .where('import_id', '=', importId)
    .where('ref', '=', ref)
    .orderBy('line')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  const detail = row.detail ? (JSON.parse(row.detail) as { variantIds?: string[]; variants?: number }) : {};
  return {
    line: row.line,
    outcome: row.outcome,
    recordId: row.record_id,
    variantIds: detail.variantIds,
    variants: detail.variants,
  };
}

/** Results after line `after`, in line order, for the results stream. */
export async function resultsAfter(db: Db, importId: string, after: number, limit: number): Promise<ResultRow[]> {
  return db
    .selectFrom('import_results')
    .selectAll()
    .where('import_id', '=', importId)
    .where('line', '>', after)
    .orderBy('line')
    .limit(limit)
    .execute();
}

/** Purges imports finished before `before` with their results, and runs of lines no import received whole. */
export async function purgeImportsBefore(db: Db, before: string, now: number): Promise<void> {
  const old = await db.selectFrom('imports').select('id').where('finished_at', '<', before).limit(1000).execute();
  for (const { id } of old) {
    await db.deleteFrom('import_results').where('import_id', '=', id).execute();
    await db.deleteFrom('import_chunks').where('import_id', '=', id).execute();
    await db.deleteFrom('imports').where('id', '=', id).execute();
  }
  await db
    .deleteFrom('import_chunks')
    .where('created_at', '<', new Date(now - ORPHAN_CHUNK_HOURS * 3_600_000).toISOString())
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('imports').select('imports.id').whereRef('imports.id', '=', 'import_chunks.import_id'))),
    )
    .execute();
}

export type ImportView = ReturnType<typeof toImport>;

/** The import as the API shows it. */
export function toImport(row: ImportRow, nowMs: number) {
  const options = JSON.parse(row.options) as { dryRun: boolean; onError: 'continue' | 'stop' };
  const counts = JSON.parse(row.counts) as Counts;
  const started = row.started_at ? Date.parse(toIso(row.started_at)) : null;
  const until = row.finished_at ? Date.parse(toIso(row.finished_at)) : nowMs;
  const seconds = started === null ? 0 : Math.max(until - started, 1) / 1000;
  return {
    id: row.id,
    state: row.state as 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'STOPPED',
    dryRun: options.dryRun,
    onError: options.onError,
    bytes: Number(row.bytes),
    lines: row.total_lines,
    linesDone: row.lines_done,
    counts,
    linesPerSecond: started === null ? 0 : Math.round((row.lines_done / seconds) * 10) / 10,
    createdAt: toIso(row.created_at),
    startedAt: toIso(row.started_at),
    finishedAt: toIso(row.finished_at),
  };
}
