import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * What shipment writes keep beside the shipments, in the same write (src/fulfilment/shipment-counts.ts,
 * docs/decisions/0063-fulfilment-imports-console-and-mirrors.md):
 * - `shipment_counts`: shipments per status, the total of an unfiltered or status list;
 * - `shipment_change_counts`: shipments per UTC day of updatedAt, day of createdAt and status, the
 *   totals of modifiedSince and createdSince lists (as `order_change_counts` are for orders);
 * - `order_items.shipped_quantity`: what shipments not voided hold of the line, so that a shipment
 *   is checked against it instead of against every shipment of the order.
 * All three are built from the shipments. Sharded counts as the orders' (migration 0007): on
 * PostgreSQL `n` is in the key (migration 0027), on SQLite the tables are WITHOUT ROWID (0025).
 * An earlier release cannot run beside them: its shipment writes would not keep them, and a line
 * could over-ship (STOP_FIRST, src/db/migrate.ts). `cli projections rebuild` rebuilds all three.
 */
export function shipmentCounts(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const dayOf = (column: string) =>
    pg ? sql`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(${sql.ref(column)}, 1, 10)`;
  const table = (name: string, keys: string[]) =>
    sql.raw(`create table ${name} (
      business_id text not null references businesses (id),
      ${keys.map((k) => `${k} text not null,`).join(' ')}
      shard integer not null,
      n bigint not null,
      constraint ${name}_pk primary key (business_id, ${keys.join(', ')}, shard)${pg ? ' include (n)' : ''}
    )${pg ? '' : ' without rowid'}`);
  return {
    async up(db: Kysely<any>) {
      await table('shipment_counts', ['status']).execute(db);
      await table('shipment_change_counts', ['day', 'created_day', 'status']).execute(db);
      await sql`insert into shipment_counts (business_id, status, shard, n)
        select business_id, status, 0, count(*) from shipments group by business_id, status`.execute(db);
      await sql`insert into shipment_change_counts (business_id, day, created_day, status, shard, n)
        select business_id, ${dayOf('updated_at')}, ${dayOf('created_at')}, status, 0, count(*) from shipments
        group by business_id, ${dayOf('updated_at')}, ${dayOf('created_at')}, status`.execute(db);

      await db.schema
        .alterTable('order_items')
        .addColumn('shipped_quantity', pg ? 'numeric' : 'text', (c) => c.notNull().defaultTo(sql`'0'`))
        .execute();
      const lines = pg
        ? sql`select s.business_id, l->>'orderItemId' as id, sum((l->>'quantity')::numeric) as q
            from shipments s cross join lateral jsonb_array_elements(s.lines) l`
        : sql`select s.business_id, json_extract(l.value, '$.orderItemId') as id,
            cast(sum(json_extract(l.value, '$.quantity')) as text) as q from shipments s, json_each(s.lines) l`;
      await sql`update order_items set shipped_quantity = shipped.q
        from (${lines} where s.status <> 'VOIDED' group by 1, 2) shipped
        where order_items.business_id = shipped.business_id and order_items.id = shipped.id`.execute(db);
    },
  };
}
