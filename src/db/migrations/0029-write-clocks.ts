import type { Kysely, Migration } from 'kysely';

/**
 * Each business's write clock (src/write/clock.ts): the time of its last write, in milliseconds
 * since the epoch. Every write takes its business's row first, which orders the business's writes,
 * and reads its time there, so that a write's `updatedAt` is later than that of every write of the
 * business that committed before it. A table of its own: business_counters.value is an `integer`
 * on PostgreSQL, too small for milliseconds.
 *
 * Each business with data starts at the latest time it already shows (its events, orders and
 * invoices), so that the first write after the upgrade is later than every earlier one, even where
 * an earlier release moved an `updatedAt` past its clock or an instance's clock ran ahead.
 */
export const writeClocks: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createTable('write_clocks')
      // No foreign key: the write that creates a business takes its clock before the business exists.
      .addColumn('business_id', 'text', (c) => c.primaryKey())
      .addColumn('last_ms', 'bigint', (c) => c.notNull())
      .execute();
    const latest = new Map<string, number>();
    for (const [table, column] of [['events', 'occurred_at'], ['orders', 'updated_at'], ['invoices', 'updated_at']] as const) {
      const rows = await db.selectFrom(table)
        .select((eb) => ['business_id', eb.fn.max(column).as('at')]).groupBy('business_id').execute() as Array<{ business_id: string; at: unknown }>;
      for (const { business_id: businessId, at } of rows) {
        const ms = new Date(at instanceof Date ? at : String(at)).getTime();
        if (Number.isFinite(ms)) latest.set(businessId, Math.max(latest.get(businessId) ?? 0, ms));
      }
    }
    const rows = [...latest].map(([businessId, ms]) => ({ business_id: businessId, last_ms: ms }));
    for (let i = 0; i < rows.length; i += 500) await db.insertInto('write_clocks').values(rows.slice(i, i + 500)).execute();
  },
};
