import { unknownEventType } from '../events/schema.ts';
import { namedEvent, updatedEvent, createdEvent, lastSequence } from '../log/events.ts';
import { eventsGone, sequenceRange } from '../events/repository.ts';
import { newId } from '../lib/ids.ts';
import { isLiveBusiness } from '../businesses/repository.ts';
import { notFound, validationError, conflict } from '../lib/errors.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import type { WriteContext } from '../write/runner.ts';
import { changesNothing } from '../write/update.ts';
import { literalAddressOf, isPublicAddress } from './address.ts';
import { toEndpoint } from './mapper.ts';
import { cancelBacklog, queueTestDelivery } from './queue.ts';
import { countLiveEndpoints, findEndpointRow, type EndpointRow } from './repository.ts';
import type { CreateWebhookEndpointInput, UpdateWebhookEndpointInput, WebhookEndpoint } from './schema.ts';
import { newWebhookSecret } from './signature.ts';

export const ENDPOINT_NOT_FOUND = 'Webhook endpoint not found';

export interface WebhookSettings {
  box: SecretBox;
  allowPrivateNetworks: boolean;
}

/**
 * Refuses at save what can never be delivered: a scheme other than https (or http with private
 * networks allowed), credentials, a fragment, or a non-public IP literal. Names are checked at delivery.
 */
function checkUrl(raw: string, settings: WebhookSettings): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError({ url: 'Must be an absolute URL' });
  }
  // `https:host` parses as https://host/; what is stored and shown is what was sent, so it is spelt out.
  if (!/^https?:\/\//i.test(raw)) throw validationError({ url: 'Must be an absolute URL (https://host/path)' });
  if (url.port === '0') throw validationError({ url: 'Must not name port 0' });
  const schemes = settings.allowPrivateNetworks ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol))
    throw validationError({
      url: settings.allowPrivateNetworks ? 'Must be an https or http URL' : 'Must be an https URL',
    });
  if (url.username !== '' || url.password !== '') throw validationError({ url: 'Must not contain credentials' });
  if (url.hash !== '') throw validationError({ url: 'Must not contain a fragment (#...)' });
  const literal = literalAddressOf(url.hostname);
  if (!settings.allowPrivateNetworks && literal !== null && !isPublicAddress(literal)) {
    throw validationError({ url: 'Must not point at a private, loopback, link-local or reserved address' });
  }
}

/** An endpoint's event types name types there are: a typo would deliver nothing, silently. */
function checkEventTypes(types: readonly string[] | undefined): void {
  const unknown = types && unknownEventType(types);
  if (unknown) throw validationError({ eventTypes: unknown });
}

/** The endpoint, its row locked first (see lockEndpoints in queue.ts). */
async function liveEndpoint(ctx: WriteContext, id: string): Promise<EndpointRow> {
  const row = await findEndpointRow(ctx.trx, ctx.businessId, id, true);
  if (!row) throw notFound(ENDPOINT_NOT_FOUND);
  return row;
}

const reload = async (ctx: WriteContext, id: string) => toEndpoint(await liveEndpoint(ctx, id), ctx.now);

/**
 * A business's endpoints, deleted ones aside, disabled ones included: each event goes to each, and
 * the instances' delivery slots are shared by every business, so the fan-out is bounded.
 */
export const MAX_ENDPOINTS = 16;

/** Deliveries start after this write; a key without margin:read makes an endpoint without cost fields. */
export async function createEndpoint(
  ctx: WriteContext,
  input: CreateWebhookEndpointInput,
  settings: WebhookSettings,
  hidesMargin = false,
) {
  checkUrl(input.url, settings);
  checkEventTypes(input.eventTypes);
  // Counted under the business's write lock, which every create of the business takes.
  if ((await countLiveEndpoints(ctx.trx, ctx.businessId)) >= MAX_ENDPOINTS)
    throw conflict(`A business has at most ${MAX_ENDPOINTS} webhook endpoints: delete one it no longer needs first`);
  const secret = newWebhookSecret();
  const id = newId('we');
  await ctx.trx
    .insertInto('webhook_endpoints')
    .values({
      id,
      business_id: ctx.businessId,
      url: input.url,
      description: input.description ?? null,
      event_types: JSON.stringify(input.eventTypes ?? []),
      status: input.status ?? 'enabled',
      secret: settings.box.seal(secret),
      previous_secret: null,
      previous_secret_expires_at: null,
      cursor_sequence: await lastSequence(ctx.trx, ctx.businessId),
      failing_since: null,
      created_at: ctx.now,
      updated_at: ctx.now,
      deleted_at: null,
      hides_margin: hidesMargin ? 1 : 0,
    })
    .execute();
  const endpoint = await reload(ctx, id);
  ctx.emit(createdEvent('webhook_endpoint', endpoint));
  return { endpoint, secret };
}

function changeEvent(before: WebhookEndpoint, after: WebhookEndpoint) {
  if (after.status !== before.status && (after.status === 'paused' || after.status === 'disabled')) {
    return { ...updatedEvent('webhook_endpoint', before, after), type: `webhook_endpoint.${after.status}` };
  }
  return updatedEvent('webhook_endpoint', before, after);
}

/**
 * Disabling drops the backlog; a disabled endpoint, enabled or paused, starts from the next event,
 * and what was queued for it meanwhile (a test event) is dropped too; a paused one goes on where it
 * stopped. Enabled, its failure window restarts. `failing_since` stays, as the reason.
 */
export async function setStatus(
  ctx: WriteContext,
  row: EndpointRow,
  status: EndpointRow['status'],
): Promise<Partial<EndpointRow>> {
  if (status === row.status) return {};
  if (status === 'disabled' || row.status === 'disabled') await cancelBacklog(ctx.trx, row.id, ctx.now);
  const from = row.status === 'disabled' ? { cursor_sequence: await lastSequence(ctx.trx, ctx.businessId) } : {};
  return status === 'enabled' ? { status, failing_since: null, ...from } : { status, ...from };
}

/** A key without margin:read hides the margin from now on (never the reverse). */
export async function updateEndpoint(
  ctx: WriteContext,
  id: string,
  input: UpdateWebhookEndpointInput,
  settings: WebhookSettings,
  hidesMargin = false,
) {
  const row = await liveEndpoint(ctx, id);
  const before = toEndpoint(row, ctx.now);
  if (input.url !== undefined) checkUrl(input.url, settings);
  checkEventTypes(input.eventTypes);
  const set = {
    ...(input.url !== undefined ? { url: input.url } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.eventTypes !== undefined ? { event_types: JSON.stringify(input.eventTypes) } : {}),
    ...(input.status !== undefined ? await setStatus(ctx, row, input.status) : {}),
    ...(hidesMargin ? { hides_margin: 1 } : {}),
  };
  // A PATCH that changes nothing writes nothing and sends no event (docs/webhooks.md).
  if (changesNothing(before, toEndpoint({ ...row, ...set } as EndpointRow, ctx.now))) return before;
  await ctx.trx
    .updateTable('webhook_endpoints')
    .set({ ...set, updated_at: ctx.now } as never)
    .where('id', '=', id)
    .execute();
  const after = await reload(ctx, id);
  ctx.emit(changeEvent(before, after));
  return after;
}

/** The service pauses (failing too long) or disables (410 Gone) an endpoint, as its own write. */
export async function changeStatusBySystem(
  ctx: WriteContext,
  id: string,
  status: 'paused' | 'disabled',
): Promise<void> {
  const row = await findEndpointRow(ctx.trx, ctx.businessId, id, true);
  if (row?.status !== 'enabled') return;
  const before = toEndpoint(row, ctx.now);
  await ctx.trx
    .updateTable('webhook_endpoints')
    .set({ ...(await setStatus(ctx, row, status)), updated_at: ctx.now } as never)
    .where('id', '=', id)
    .execute();
  ctx.emit(changeEvent(before, await reload(ctx, id)));
}

export async function deleteEndpoint(ctx: WriteContext, id: string): Promise<void> {
  const row = await liveEndpoint(ctx, id);
  await cancelBacklog(ctx.trx, id, ctx.now);
  await ctx.trx
    .updateTable('webhook_endpoints')
    .set({ deleted_at: ctx.now, updated_at: ctx.now })
    .where('id', '=', id)
    .execute();
  const object: WebhookEndpoint = { ...toEndpoint(row, ctx.now), updatedAt: ctx.now };
  ctx.emit(namedEvent('webhook_endpoint', 'deleted', object));
}

/** The previous secret keeps signing beside the new one for `graceSeconds`. */
export async function rotateSecret(ctx: WriteContext, id: string, graceSeconds: number, settings: WebhookSettings) {
  const row = await liveEndpoint(ctx, id);
  const before = toEndpoint(row, ctx.now);
  const secret = newWebhookSecret();
  const graceEnds = new Date(new Date(ctx.now).getTime() + graceSeconds * 1000).toISOString();
  await ctx.trx
    .updateTable('webhook_endpoints')
    .set({
      secret: settings.box.seal(secret),
      previous_secret: graceSeconds > 0 ? row.secret : null,
      previous_secret_expires_at: graceSeconds > 0 ? graceEnds : null,
      updated_at: ctx.now,
    })
    .where('id', '=', id)
    .execute();
  const endpoint = await reload(ctx, id);
  ctx.emit(updatedEvent('webhook_endpoint', before, endpoint));
  return { endpoint, secret };
}

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
  if (after < oldest - 1) throw eventsGone(oldest);
  const open = await ctx.trx
    .selectFrom('webhook_replays')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('endpoint_id', '=', id)
    .where('finished_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (Number(open.n) >= 10) throw conflict('This endpoint already has 10 replays in progress; wait for one to finish');
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
  await ctx.trx.insertInto('webhook_replays').values(replay).execute();
  return {
    id: replay.id,
    endpointId: id,
    afterSequence: after,
    untilSequence: until,
    createdAt: ctx.now,
    endpointStatus: endpoint.status,
  };
}
