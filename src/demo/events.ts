import { insertRows } from '../db/bulk.ts';
import type { Db } from '../db/types.ts';
import { exportBuyers } from '../buyers/repository.ts';
import { lastSequence } from '../log/events.ts';
import { exportItems } from '../items/repository.ts';
import { newId } from '../lib/ids.ts';
import type { Order } from '../orders/schema.ts';
import type { Shipment } from '../fulfilment/shipment-schema.ts';
import { SYSTEM } from '../write/runner.ts';
import { createDeflater, TextRun } from './deflate-worker.ts';

const BATCH = 2_000;
const COLUMNS = [
  'sequence',
  'id',
  'type',
  'resource_type',
  'resource_id',
  'resource_version',
  'occurred_at',
  'data',
] as const;
const DATA = COLUMNS.indexOf('data');

/**
 * The events a demo business's data implies, written beside it: each item and buyer created; each
 * order created, then updated and deleted as its timestamps say; each shipment created, then
 * updated when it was delivered or returned. Each event's object is the
 * record as it is now, so a copy rebuilt from the feed equals the data. Sequences follow the
 * business's counter; price lists are left out.
 */
export interface DemoEvents {
  batch(): DemoEventBatch;
  readonly sequence: number;
  close(): Promise<void>;
}

export interface DemoEventBatch {
  /** From the record as its GET shows it. */
  addCreated(resourceType: 'item' | 'buyer', record: { id: string; createdAt: string }): void;
  addOrder(order: Order): void;
  /** Created, then updated when it was (delivered or returned). */
  addShipment(shipment: Shipment): void;
  /** Starts deflating, overlapping what the caller does next. */
  encode(): void;
  /** Inserts the batch and moves the counter, in the caller's transaction, in the order batches were made. */
  insert(db: Db): Promise<void>;
}

export async function createDemoEvents(db: Db, businessId: string): Promise<DemoEvents> {
  let sequence = await lastSequence(db, businessId);
  const deflater = createDeflater();
  const constants = { business_id: businessId, actor: JSON.stringify(SYSTEM), request_id: null, idempotency_key: null };
  const batch = (): DemoEventBatch => {
    const rows: unknown[][] = [];
    const dataOf: number[] = [];
    const texts = new TextRun();
    let encoding: Promise<Buffer[]> | undefined;
    const add = (type: string, resourceType: string, id: string, version: number, at: string) => {
      rows.push([++sequence, newId('evt'), type, resourceType, id, version, at, null]);
      dataOf.push(texts.count - 1);
    };
    const encode = () => {
      if (encoding) return;
      encoding = deflater.deflate(texts);
      // Awaited by insert; a batch a failed load never inserts must not count as unhandled.
      encoding.catch(() => {});
    };
    return {
      addCreated(resourceType, record) {
        texts.push(JSON.stringify({ object: record }));
        add(`${resourceType}.created`, resourceType, record.id, 1, record.createdAt);
      },
      addOrder(order) {
        // The order's events share one data: written and deflated once.
        texts.push(JSON.stringify({ object: order }));
        add('order.created', 'order', order.id, 1, order.createdAt);
        if (order.deletedAt !== null) add('order.deleted', 'order', order.id, 2, order.deletedAt);
        else if (order.updatedAt !== order.createdAt) add('order.updated', 'order', order.id, 2, order.updatedAt);
      },
      addShipment(shipment) {
        texts.push(JSON.stringify({ object: shipment }));
        add('shipment.created', 'shipment', shipment.id, 1, shipment.createdAt);
        if (shipment.version > 1) add('shipment.updated', 'shipment', shipment.id, 2, shipment.updatedAt);
      },
      encode,
      async insert(target) {
        if (rows.length === 0) return;
        encode();
        const data = await encoding!;
        rows.forEach((row, i) => {
          row[DATA] = data[dataOf[i]];
        });
        await insertRows(target, 'events', COLUMNS, rows, constants);
        await target
          .updateTable('business_counters')
          .set({ value: rows[rows.length - 1][0] as number })
          .where('business_id', '=', businessId)
          .where('name', '=', 'event')
          .execute();
      },
    };
  };
  return {
    batch,
    get sequence() {
      return sequence;
    },
    close: () => deflater.close(),
  };
}

/** Each item and buyer created, read back as their GETs show them. */
export async function insertCatalogueEvents(db: Db, businessId: string, events: DemoEvents): Promise<void> {
  for (const [resourceType, read] of [
    ['item', exportItems],
    ['buyer', exportBuyers],
  ] as const) {
    for (let after = ''; ; ) {
      const records = await read(db, businessId, after, BATCH);
      if (records.length === 0) break;
      const batch = events.batch();
      for (const r of records) batch.addCreated(resourceType, r);
      after = records[records.length - 1].id;
      await batch.insert(db);
    }
  }
}
