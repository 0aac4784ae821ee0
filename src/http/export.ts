import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Type } from 'typebox';
import type { Db } from '../db/types.ts';
import type { OpenSnapshot } from '../db/snapshot.ts';
import type { ApiInstance } from './types.ts';
import { lastSequence } from '../log/events.ts';
import { withoutMargin } from '../businesses/margin.ts';

/**
 * Records per query while streaming: enough to amortise the round trip, few enough to keep memory
 * flat. Larger batches raised the server's peak memory, smaller ones slowed the export
 * (docs/performance.md).
 */
export const streamTuning = { batch: 200 };

/** A resource's export reader: its records of the business after `afterId`, in id order, as GET shows them. */
export type ExportBatch = (
  db: Db,
  businessId: string,
  afterId: string,
  limit: number,
) => Promise<Array<{ id: string }>>;

/** One resource's export: its path (`orders`), its OpenAPI tag, its noun, and its reader. */
export interface Export {
  path: string;
  tag: string;
  noun: string;
  batch: ExportBatch;
}

/**
 * One NDJSON chunk per batch, in id order, until the snapshot has no more. The next batch is asked
 * for before this one is written out: on PostgreSQL the database reads it while this process turns
 * the batch into JSON, instead of each waiting for the other. The event loop gets a turn for each
 * batch: on SQLite a batch's read resolves at once and a fast client never pushes back, so
 * without it one export held every other request of the process until it ended.
 */
async function* ndjson(
  db: Db,
  businessId: string,
  batch: ExportBatch,
  shown: (records: unknown[]) => unknown[],
): AsyncGenerator<Buffer> {
  const ask = (after: string) => {
    const asked = batch(db, businessId, after, streamTuning.batch);
    // Handled now (it fails where it is awaited): it may fail before then, while a chunk is written.
    asked.catch(() => {});
    return asked;
  };
  let next = ask('');
  try {
    for (;;) {
      const records = await next;
      if (records.length === 0) return;
      next = ask(records[records.length - 1].id);
      // Also lets the next batch's query reach the database before this batch is written out.
      await nextTurn();
      yield ndjsonChunk(shown(records));
    }
  } finally {
    // An export ended early (the client left) lets its last read finish before the snapshot goes.
    await next.catch(() => {});
  }
}

/**
 * Records as NDJSON bytes, each line written straight into one buffer: joining the lines into one
 * string first made a rope that cost three times the JSON.stringify to flatten and encode.
 */
function ndjsonChunk(records: unknown[]): Buffer {
  const lines = records.map((r) => JSON.stringify(r));
  let size = 0;
  for (const line of lines) size += Buffer.byteLength(line) + 1;
  const chunk = Buffer.allocUnsafe(size);
  let at = 0;
  for (const line of lines) {
    at += chunk.write(line, at);
    chunk[at++] = 0x0a;
  }
  return chunk;
}

/**
 * Registers `GET /{path}/export` for a resource (its routes.ts calls it): every live record as
 * NDJSON from one snapshot, with the event sequence it holds.
 */
export function registerExport(app: ApiInstance, openSnapshot: OpenSnapshot, { path, tag, noun, batch }: Export): void {
  app.get(
    `/${path}/export`,
    {
      config: { extension: true },
      schema: {
        tags: [tag],
        operationId: `export${tag}`,
        summary: `Every live ${noun} as NDJSON, from one snapshot, with the event sequence it holds`,
        description:
          `Streams one JSON ${noun} per line, exactly as GET /api/v1/${path}/{id} shows it, in id order, all read from ` +
          'one consistent snapshot. The Supplyline-Event-Sequence header names N: the snapshot is the business as it was after ' +
          'event N, so load it, then follow GET /api/v1/events?after=N, and nothing is missed or counted twice. Records from ' +
          'before the feed began (written by a release without it, before the upgrade) are in every export, and in no event: ' +
          'start a copy with the export, not with the feed from 0.',
        response: {
          200: {
            description: `One ${noun} per line (application/x-ndjson)`,
            headers: {
              'Supplyline-Event-Sequence': {
                type: 'integer',
                description: 'The last event whose effects the export holds',
              },
            },
            content: { 'application/x-ndjson': { schema: Type.String({ description: 'Newline-delimited JSON' }) } },
          },
        },
      },
    },
    async (request, reply) => {
      const snapshot = await openSnapshot();
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        snapshot.release().catch((err) => request.log.warn({ err }, 'export snapshot release failed'));
      };
      try {
        const sequence = await lastSequence(snapshot.db, request.businessId);
        const shown = request.hidesMargin ? withoutMargin : (records: unknown[]) => records;
        const stream = Readable.from(ndjson(snapshot.db, request.businessId, batch, shown), { objectMode: false });
        // Ended, failed or abandoned by the client: the snapshot's connection goes back either way.
        stream.once('close', release);
        return reply
          .header('supplyline-event-sequence', String(sequence))
          .type('application/x-ndjson; charset=utf-8')
          .send(stream as never);
      } catch (error) {
        release();
        throw error;
      }
    },
  );
}
