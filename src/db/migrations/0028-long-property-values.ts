import { createHash } from 'node:crypto';
import type { Kysely, Migration } from 'kysely';

/** As src/orders/projections/properties.ts `VALUE_MAX_BYTES` and `fittedValue` were when this migration was written. */
const VALUE_MAX_BYTES = 1000;
const fitted = (encoded: string) =>
  (Buffer.byteLength(encoded) <= VALUE_MAX_BYTES ? encoded : `h:${createHash('sha256').update(encoded).digest('hex')}`);

/**
 * Both backends: a side-table value longer than 1,000 UTF-8 bytes is stored as `h:` and its
 * SHA-256 from now on (src/orders/projections/properties.ts `fittedValue`), and filters look such
 * values up the same way. On PostgreSQL a string past about 2.7 kB could not be written at all (the
 * lookup index's entry was too big), so an order with a long note was refused with a 500; shorter
 * long strings, and any on SQLite, were stored as they were. Those are hashed here, so that filters
 * still find them. A value of at most 250 characters fits in 1,000 bytes (4 bytes a character at
 * most) and is not read. Hashed values are 66 characters, so a second run changes nothing.
 */
export const longPropertyValues: Migration = {
  async up(db: Kysely<any>) {
    for (const table of ['order_properties', 'order_deleted_properties']) {
      let after = { order_id: '', path: '' };
      for (;;) {
        const rows: Array<{ order_id: string; path: string; value: string }> = await db.selectFrom(table).select(['order_id', 'path', 'value'])
          .where((eb) => eb.fn('length', ['value']), '>', 250)
          .where((eb) => eb.or([eb('order_id', '>', after.order_id), eb.and([eb('order_id', '=', after.order_id), eb('path', '>', after.path)])]))
          .orderBy('order_id').orderBy('path').limit(500).execute();
        if (rows.length === 0) break;
        for (const row of rows) {
          const value = fitted(row.value);
          if (value !== row.value) await db.updateTable(table).set({ value }).where('order_id', '=', row.order_id).where('path', '=', row.path).execute();
        }
        after = rows.at(-1)!;
      }
    }
  },
};
