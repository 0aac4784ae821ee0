/** Deliveries asked for by hand: a test event to one endpoint, and a range of events again. */
import { isLiveBusiness } from '../businesses/repository.ts';
import { eventsGone, sequenceRange } from '../events/repository.ts';
import { conflict, validationError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import type { WriteContext } from '../write/runner.ts';
import { toEndpoint } from './mapper.ts';
import { queueTestDelivery } from './queue.ts';
import { countOpenReplays, insertReplay } from './repository.ts';
import { liveEndpoint } from './service.ts';

/** Queues a `webhook.test` event to this endpoint only, outside the log. */
export async function sendTestEvent(ctx: WriteContext, id: string) {
  const row = await liveEndpoint(ctx, id);
  const endpoint = toEndpoint(row, ctx.now);
  const eventId = newId('evt');
  const event = {
    id: eventId,
    sequence: null,
    type: 'webhook.test',
    resourceType: 'webhook_endpoint',
    resourceId: id,
    resourceVersion: null,
    occurredAt: ctx.now,
    actor: ctx.actor,
    requestId: ctx.requestId,
    idempotencyKey: ctx.idempotencyKey,
    livemode: await isLiveBusiness(ctx.trx, ctx.businessId),
    data: { object: endpoint },
  };
  const deliveryId = await queueTestDelivery(ctx, id, eventId, JSON.stringify(event));
  return { deliveryId, eventId, endpointStatus: row.status };
}

/** Queues the events after `after` up to `until` again, in order. */
export async function replayRange(ctx: WriteContext, id: string, after: number, until: number) {
  const endpoint = await liveEndpoint(ctx, id);
  const { oldest, latest } = await sequenceRange(ctx.trx, ctx.businessId);
  if (until <= after) throw validationError({ untilSequence: 'Must be greater than afterSequence' });
  if (until > latest)
    throw validationError({ untilSequence: `Must be at most the latest event's sequence, ${latest}` });
  if (after < oldest - 1) throw eventsGone(oldest, latest);
  if ((await countOpenReplays(ctx.trx, id)) >= 10)
    throw conflict('This endpoint already has 10 replays in progress; wait for one to finish');
  const replay = {
    id: newId('whr'),
    business_id: ctx.businessId,
    endpoint_id: id,
    after_sequence: after,
    until_sequence: until,
    cursor_sequence: after,
    created_at: ctx.now,
    finished_at: null,
  };
  await insertReplay(ctx.trx, replay);
  return {
    id: replay.id,
    endpointId: id,
    afterSequence: after,
    untilSequence: until,
    createdAt: ctx.now,
    endpointStatus: endpoint.status,
  };
}
