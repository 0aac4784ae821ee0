import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Retention purges each business's oldest events by key (src/events/log.ts purgeEventsBefore),
 * which keeps what is left one unbroken run of sequences; nothing reads events by time any more,
 * so the index by `occurred_at` was one more entry every event write paid for nothing.
 */
export const dropEventsOccurredIndex: Migration = {
  async up(db: Kysely<any>) {
    await sql`drop index if exists events_occurred_idx`.execute(db);
  },
};
