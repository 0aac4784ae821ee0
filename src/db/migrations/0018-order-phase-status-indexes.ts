import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * A list by phase alone or status alone, in list order. `orders_live_phase_status_idx` serves
 * both together; for one of them it is not in `createdAt` order (phase alone: sorted by status
 * first) or not usable at all (status alone), so a page walked the whole list's index and read
 * every order's row to test it: at 1M orders, `status=ACCEPTED` with `propertyExists=false` took
 * 2.9 s for its first page.
 */
export function orderPhaseStatusIndexes(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`create index orders_live_phase_idx on orders (business_id, phase, created_at desc, id desc)
        where deleted_at is null`.execute(db);
      await sql`create index orders_live_status_idx on orders (business_id, status, created_at desc, id desc)
        where deleted_at is null`.execute(db);
    },
  };
}
