import { Readable } from 'node:stream';
import type { Db } from '../db/types.ts';
import { resultsAfter, type ResultRow } from './repository.ts';

const BATCH = 1000;

/** One line of an import's results: `{line, ref, outcome, id}`, and `variantIds` or `error`. */
function resultLine(row: ResultRow): string {
  const detail = row.detail ? (JSON.parse(row.detail) as Record<string, unknown>) : {};
  return JSON.stringify({ line: row.line, ref: row.ref, outcome: row.outcome, id: row.record_id, ...detail });
}

/** An import's results as NDJSON, read a thousand at a time: for the API and the console alike. */
export function resultsStream(db: Db, importId: string): Readable {
  async function* lines() {
    for (let after = 0; ; ) {
      const rows = await resultsAfter(db, importId, after, BATCH);
      if (rows.length === 0) return;
      yield Buffer.from(rows.map((r) => `${resultLine(r)}\n`).join(''));
      after = rows[rows.length - 1].line;
    }
  }
  return Readable.from(lines(), { objectMode: false });
}
