import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

const TABLES = [
  { name: 'order_counts', keys: ['business_id', 'phase', 'status'] },
  { name: 'order_property_counts', keys: ['business_id', 'path'] },
] as const;

/**
 * The maintained counts get a `shard` column in their key (src/db/dialect.ts countShard): on
 * PostgreSQL concurrent writers of one business add to different rows instead of queueing on one
 * row lock until commit; readers sum the rows. Existing counts become shard 0. The tables are
 * rebuilt, since SQLite cannot change a primary key in place.
 */
export function countShards(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const { name, keys } of TABLES) {
        const sharded = `${name}_sharded`;
        let table = db.schema.createTable(sharded).addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'));
        for (const key of keys.slice(1)) table = table.addColumn(key, 'text', (c) => c.notNull());
        await table
          .addColumn('shard', 'integer', (c) => c.notNull())
          .addColumn('n', 'bigint', (c) => c.notNull())
          // The builder tracks literal column names only; these were added in the loop above.
          .addPrimaryKeyConstraint(`${name}_shard_pk`, [...keys, 'shard'] as never)
          .execute();
        const columns = sql.join(keys.map((k) => sql.ref(k)));
        await sql`insert into ${sql.table(sharded)} (${columns}, shard, n) select ${columns}, 0, n from ${sql.table(name)}`.execute(db);
        await db.schema.dropTable(name).execute();
        await db.schema.alterTable(sharded).renameTo(name).execute();
      }
    },
  };
}
