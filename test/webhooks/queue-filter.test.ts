import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { lastSequence } from '../../src/log/events.ts';
import type { NewEvent } from '../../src/log/events.ts';
import { queueFromLog } from '../../src/webhooks/queue.ts';
import { createWriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';

const system = { type: 'system' as const, id: 'test', name: null };

/** `count` events in one write: mostly order updates, and every `every`th an invoice or an item creation. */
async function appendMany(ctx: TestContext, t: Tenant, count: number, every: number): Promise<void> {
  await createWriteRunner(ctx.db).run({ businessId: t.businessId, actor: system }, async (w) => {
    for (let i = 0; i < count; i++) {
      const event: NewEvent =
        i % every === 0
          ? {
              type: i % (2 * every) === 0 ? 'invoice.created' : 'item.created',
              resourceType: i % (2 * every) === 0 ? 'invoice' : 'item',
              resourceId: `x_${i}`,
              object: { id: `x_${i}` },
            }
          : {
              type: 'order.updated',
              resourceType: 'order',
              resourceId: `ord_${i % 50}`,
              object: { id: `ord_${i % 50}` },
              changes: {},
            };
      w.emit(event);
    }
  });
}

describeEachBackend(
  "queueing an endpoint's events through the feed's filtered read",
  (ctx) => {
    it('queues exactly the events its types take, in order, past batches of skipped and of taken events, to the end of the log', async () => {
      const t = await ctx().createTenant();
      const created = await ctx().request<{ id: string }>('POST', '/api/v1/webhook-endpoints', {
        as: t,
        body: { url: 'https://hooks.example.com/in', eventTypes: ['invoice.*', 'item.created'] },
      });
      assert.equal(created.status, 201);
      await appendMany(ctx(), t, 1_400, 2);
      await appendMany(ctx(), t, 1_300, 400);
      const latest = await lastSequence(ctx().db, t.businessId);

      const runner = createWriteRunner(ctx().db);
      const passes: number[] = [];
      for (let i = 0; i < 100; i++) {
        const looked = await runner.run({ businessId: t.businessId, actor: system }, (w) =>
          queueFromLog(w, created.body.id),
        );
        if (looked === 0) break;
        passes.push(looked);
      }
      const queued = await ctx()
        .db.selectFrom('webhook_deliveries')
        .select(['sequence', 'event_type'])
        .where('endpoint_id', '=', created.body.id)
        .orderBy('sequence')
        .execute();
      const wanted = await ctx()
        .db.selectFrom('events')
        .select(['sequence', 'type'])
        .where('business_id', '=', t.businessId)
        .where('type', 'in', ['invoice.created', 'item.created'])
        .orderBy('sequence')
        .execute();
      assert.deepEqual(
        queued.map((q) => [Number(q.sequence), q.event_type]),
        wanted.map((e) => [Number(e.sequence), e.type]),
      );
      assert.ok(wanted.length > 500, `${wanted.length} taken: more than one batch`);
      const endpoint = await ctx()
        .db.selectFrom('webhook_endpoints')
        .select('cursor_sequence')
        .where('id', '=', created.body.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(endpoint.cursor_sequence), latest, 'the cursor moved past the skipped tail');
      // A batch is a page of taken events, and the skipped ones cost no pass of their own: 700 + 4 taken in 2,700 events.
      assert.ok(passes.length <= 2, `passes: ${passes.join(', ')}`);
    });
  },
  { config: { webhooks: { ...loadConfig({}).webhooks, workers: false } } },
);
