import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The webhook worker claims the earliest due deliveries, and sleeps until the next one falls due.
 * Both ask for `status in ('pending', 'delivering')` in `due_at` order, which the (status, due_at)
 * index cannot give for two statuses at once: PostgreSQL read and sorted every unfinished delivery
 * on each claim (8–20 ms with 14k queued, the most of a delivery's database time). This index holds
 * only unfinished deliveries, in due order; queries must name the two statuses as literals for the
 * planner to use it.
 */
export const webhookDueIndex: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('webhook_deliveries_active_due_idx').on('webhook_deliveries').column('due_at')
      .where(sql<boolean>`status in ('pending', 'delivering')`).execute();
  },
};
