import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createDatabase } from '../src/db/connection.ts';
import { lastSequence } from '../src/log/events.ts';

/**
 * Grows a demo business's event log to `--to` events for the feed benchmark (issue 17: a page of
 * 100 at 10M events), by appending copies of its own events with the next sequences, in chunks of
 * 100,000 in one statement each. The copies are the demo's real rows (types, resources, deflated
 * data), dated now, so that retention does not purge them. Then the business's event counter
 * names the last one, as the write path would leave it.
 *
 *   npx tsx bench/grow-events.ts --url sqlite:data/demo-1m.db --business bus_… --to 10000000
 */
const { values } = parseArgs({
  options: { url: { type: 'string' }, business: { type: 'string' }, to: { type: 'string', default: '10000000' } },
});
if (!values.url || !values.business) throw new Error('--url and --business are required');
const businessId = values.business;
const target = Number(values.to);
const CHUNK = 100_000;

const handle = createDatabase(values.url);
try {
  const db = handle.db;
  const first = Number(
    (
      await db
        .selectFrom('events')
        .select(sql<number | string>`min(sequence)`.as('n'))
        .where('business_id', '=', businessId)
        .executeTakeFirstOrThrow()
    ).n,
  );
  const source = await lastSequence(db, businessId);
  if (!(source > 0)) throw new Error(`business ${businessId} has no events`);
  let last = source;
  const now = new Date().toISOString();
  const started = performance.now();
  let copy = 0;
  while (last < target) {
    copy++;
    for (let from = first; from <= source && last < target; from += CHUNK) {
      const to = Math.min(source, from + CHUNK - 1, from + (target - last) - 1);
      const shift = last - from + 1;
      await sql`insert into events (business_id, sequence, id, type, resource_type, resource_id, resource_version, occurred_at, actor, request_id, idempotency_key, data)
        select business_id, sequence + ${shift}, ${`evt_g${copy}_`} || id, type, resource_type, resource_id, resource_version, ${now}, actor, request_id, idempotency_key, data
        from events where business_id = ${businessId} and sequence >= ${from} and sequence <= ${to}`.execute(db);
      last += to - from + 1;
      const seconds = (performance.now() - started) / 1000;
      console.error(
        `${last.toLocaleString('en')} / ${target.toLocaleString('en')} events (${Math.round((last - source) / seconds).toLocaleString('en')}/s)`,
      );
    }
  }
  await db
    .updateTable('business_counters')
    .set({ value: last })
    .where('business_id', '=', businessId)
    .where('name', '=', 'event')
    .execute();
  console.log(JSON.stringify({ businessId, events: last, copiedFrom: source }));
} finally {
  await handle.close();
}
