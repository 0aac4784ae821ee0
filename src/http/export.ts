import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Type } from 'typebox';
import type { Db } from '../db/types.ts';
import type { OpenSnapshot } from '../db/snapshot.ts';
import type { ApiInstance } from './types.ts';
import { lastSequence } from '../log/events.ts';
import { withoutMargin } from '../businesses/margin.ts';

/** Records per query: amortises round trips while keeping memory flat (docs/performance.md). */
export const streamTuning = { batch: 200 };

/** A resource's records after `afterId`, in id order, as GET shows them. */
export type ExportBatch = (
  db: Db,
  businessId: string,
  afterId: string,
  limit: number,
) => Promise<Array<{ id: string }>>;

export interface Export {
  path: string;
  tag: string;
  noun: string;
  batch: ExportBatch;
}

/**
 * One NDJSON chunk per batch until the snapshot is done. The next batch is asked for before this
 * one is written, so the database reads while this process serialises. Each batch yields the event
 * loop: on SQLite reads resolve at once, and one export would hold every other request.
 */
async function* ndjson(
  db: Db,
  businessId: string,
  batch: ExportBatch,
  shown: (records: unknown[]) => unknown[],
): AsyncGenerator<Buffer> {
  const ask = (after: string) => {
    const asked = batch(db, businessId, after, streamTuning.batch);
    // Handled now: it may fail while a chunk is being written, before it is awaited.
    asked.catch(() => {});
    return asked;
  };
  let next = ask('');
  try {
    for (;;) {
      const records = await next;
      if (records.length === 0) return;
      next = ask(records[records.length - 1].id);
      // Also lets the next batch's query reach the database first.
      await nextTurn();
      yield ndjsonChunk(shown(records));
    }
  } finally {
    // An export the client left lets its last read finish before the snapshot goes.
    await next.catch(() => {});
  }
}

/** Records as NDJSON bytes, written into one buffer: joined strings made a rope costly to flatten. */
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

/** `GET /{path}/export`: every live record as NDJSON from one snapshot, with the event sequence it holds. */
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
        // Ended, failed or abandoned: the snapshot's connection goes back.
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
