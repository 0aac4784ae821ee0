import type { Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/types.ts';

/** Endpoints reported by the oldest undelivered delivery's age: the worst ones, so the series stay few. */
const ENDPOINTS_SHOWN = 50;

/** Queue depth and the oldest due delivery's age, read when /metrics is scraped. */
export function registerWebhookGauges(registry: Registry, db: Kysely<Database>, clock: () => number): void {
  new Gauge({
    name: 'supplyline_webhook_queue_depth',
    help: 'Webhook deliveries not finished, by state (queued behind their resource, pending, delivering)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('webhook_deliveries')
        .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
        .where('status', 'in', ['queued', 'pending', 'delivering'])
        .groupBy('status')
        .execute();
      for (const status of ['queued', 'pending', 'delivering'])
        this.set({ status }, Number(rows.find((r) => r.status === status)?.n ?? 0));
    },
  });
  new Gauge({
    name: 'supplyline_webhook_oldest_pending_seconds',
    help: 'How long the longest-waiting due delivery has been due (0 when none is)',
    registers: [registry],
    async collect() {
      const now = new Date(clock()).toISOString();
      const row = await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.min('due_at').as('due'))
        .where('status', '=', 'pending')
        .where('due_at', '<=', now)
        .executeTakeFirst();
      const due = row?.due as Date | string | null | undefined;
      this.set(due == null ? 0 : Math.max(0, (clock() - new Date(due).getTime()) / 1000));
    },
  });
  new Gauge({
    name: 'supplyline_webhook_oldest_undelivered_seconds',
    help:
      "Age of each endpoint's oldest delivery not yet delivered (queued, pending or being sent), " +
      `for the ${ENDPOINTS_SHOWN} endpoints with the oldest`,
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('webhook_deliveries')
        .select(['endpoint_id', (eb) => eb.fn.min('created_at').as('oldest')])
        .where('status', 'in', ['queued', 'pending', 'delivering'])
        .groupBy('endpoint_id')
        .orderBy((eb) => eb.fn.min('created_at'))
        .limit(ENDPOINTS_SHOWN)
        .execute();
      // An endpoint whose queue emptied drops out rather than staying at its last age.
      this.reset();
      for (const row of rows)
        this.set(
          { endpoint: row.endpoint_id },
          Math.max(0, (clock() - new Date(row.oldest as string | Date).getTime()) / 1000),
        );
    },
  });
}
