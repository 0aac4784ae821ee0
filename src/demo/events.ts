import { insertRows } from '../db/bulk.ts';
import type { Db } from '../db/types.ts';
import { exportBuyers } from '../buyers/repository.ts';
import { encodeData } from '../events/codec.ts';
import { lastSequence } from '../events/log.ts';
import { exportItems } from '../items/repository.ts';
import { newId } from '../lib/ids.ts';
import { toIso } from '../lib/time.ts';
import { exportOrders } from '../orders/repository.ts';
import { SYSTEM } from '../write/runner.ts';

const BATCH = 2_000;
const COLUMNS = ['sequence', 'id', 'type', 'resource_type', 'resource_id', 'resource_version', 'occurred_at', 'data'] as const;

/**
 * The events a demo business's data implies, after it was loaded around the write path: each item
 * and buyer created; each order created, then updated when its updatedAt is later, then deleted
 * when it is. Every event's object is the record as it is now (the demo has no history to tell),
 * so a copy rebuilt from the feed equals the data. Sequences follow the business's counter, in
 * resource order then id order: occurredAt rises per resource, not across the log. Price lists are
 * left out (the demo's are made with its catalogue and shown by GET /pricing). `onProgress` gets
 * the number of orders done.
 */
export async function insertDemoEvents(db: Db, businessId: string, onProgress?: (orders: number) => void): Promise<number> {
  let sequence = await lastSequence(db, businessId);
  const actor = JSON.stringify(SYSTEM);
  let rows: unknown[][] = [];
  const add = (type: string, resourceType: string, id: string, version: number, at: unknown, object: unknown) => {
    rows.push([++sequence, newId('evt'), type, resourceType, id, version, toIso(at as string), encodeData({ object })]);
  };
  const flush = async () => {
    await insertRows(db, 'events', COLUMNS, rows, { business_id: businessId, actor, request_id: null, idempotency_key: null });
    rows = [];
  };

  for (const [resourceType, read] of [['item', exportItems], ['buyer', exportBuyers]] as const) {
    for (let after = ''; ;) {
      const records = await read(db, businessId, after, BATCH);
      if (records.length === 0) break;
      for (const r of records) add(`${resourceType}.created`, resourceType, r.id, 1, r.createdAt, r);
      after = records[records.length - 1].id;
      await flush();
    }
  }

  let orders = 0;
  for (let after = ''; ;) {
    const records = await exportOrders(db, businessId, after, BATCH, { includeDeleted: true });
    if (records.length === 0) break;
    for (const o of records) {
      let version = 0;
      add('order.created', 'order', o.id, ++version, o.createdAt, o);
      if (o.deletedAt !== null) add('order.deleted', 'order', o.id, ++version, o.deletedAt, o);
      else if (o.updatedAt !== o.createdAt) add('order.updated', 'order', o.id, ++version, o.updatedAt, o);
    }
    orders += records.length;
    after = records[records.length - 1].id;
    await flush();
    onProgress?.(orders);
  }
  await db.updateTable('business_counters').set({ value: sequence })
    .where('business_id', '=', businessId).where('name', '=', 'event').execute();
  return sequence;
}
