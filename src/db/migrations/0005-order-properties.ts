import type { Kysely, Migration } from 'kysely';
import type { Dialect } from '../types.ts';

const BATCH = 5_000;
const ROWS_PER_INSERT = 500;

/*
 * A frozen copy of the path encoding as it was when this migration was written
 * (src/orders/projections/properties.ts): a migration must give the same result whatever the
 * application code later becomes. Later changes to the encoding come with their own migration.
 */
const SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/;
const MAX_SEGMENTS = 16;
const ANY_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

function canonicalNumber(text: string): string | null {
  const m = ANY_NUMBER.exec(text);
  if (!m) return null;
  let digits = (m[2] + (m[3] ?? '')).replace(/^0+/, '');
  if (digits === '') return '0e0';
  let exponent = BigInt(m[4] ?? '0') - BigInt((m[3] ?? '').length);
  const trimmed = digits.replace(/0+$/, '');
  exponent += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `${m[1]}${digits}e${exponent}`;
}

function scalarOf(value: unknown): string | null {
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'boolean') return `b:${value}`;
  if (typeof value === 'number') return Number.isFinite(value) ? `n:${canonicalNumber(String(value))}` : null;
  return null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function propertyPaths(properties: unknown): Array<{ path: string; value: string | null }> {
  const out: Array<{ path: string; value: string | null }> = [];
  const walk = (object: Record<string, unknown>, prefix: string, depth: number) => {
    for (const [key, value] of Object.entries(object)) {
      if (!SEGMENT.test(key)) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      out.push({ path, value: scalarOf(value) });
      if (isObject(value) && depth + 1 < MAX_SEGMENTS) walk(value, path, depth + 1);
    }
  };
  const parsed: unknown = typeof properties === 'string' ? JSON.parse(properties) : properties;
  if (isObject(parsed)) walk(parsed, '', 0);
  return out;
}

/**
 * The flattened property index of live orders (src/orders/properties-index.ts): one row per
 * path present in an order's properties, and the number of live orders per path. Backfilled here
 * from the existing live orders, in batches in key order, with a frozen copy of the encoding.
 */
export function orderProperties(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_properties')
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('value', 'text')
        .addPrimaryKeyConstraint('order_properties_pk', ['order_id', 'path'])
        .execute();
      // A value's orders and a path's orders, both answered from the index alone.
      await db.schema.createIndex('order_properties_lookup_idx').on('order_properties')
        .columns(['business_id', 'path', 'value', 'order_id']).execute();
      await db.schema.createTable('order_property_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_property_counts_pk', ['business_id', 'path'])
        .execute();

      let after = '';
      for (;;) {
        const orders: Array<{ id: string; business_id: string; properties: unknown }> = await db.selectFrom('orders').select(['id', 'business_id', 'properties'])
          .where('id', '>', after).where('deleted_at', 'is', null).where('properties', 'is not', null)
          .orderBy('id').limit(BATCH).execute();
        if (orders.length === 0) break;
        const rows = orders.flatMap((o) => propertyPaths(o.properties).map((p) => ({ business_id: o.business_id, order_id: o.id, ...p })));
        for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await db.insertInto('order_properties').values(rows.slice(i, i + ROWS_PER_INSERT)).execute();
        after = orders[orders.length - 1].id;
      }
      await db.insertInto('order_property_counts').columns(['business_id', 'path', 'n'])
        .expression((eb: any) => eb.selectFrom('order_properties').select(['business_id', 'path', eb.fn.countAll().as('n')]).groupBy(['business_id', 'path']))
        .execute();
    },
  };
}
