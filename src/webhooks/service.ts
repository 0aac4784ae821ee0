import { namedEvent, updatedEvent, createdEvent, lastSequence } from '../log/events.ts';
import { newId } from '../lib/ids.ts';
import { notFound, conflict } from '../lib/errors.ts';
import type { WriteContext } from '../write/runner.ts';
import { changesNothing } from '../write/update.ts';
import { checkEventTypes, checkUrl, type WebhookSettings } from './checks.ts';
import { toEndpoint } from './mapper.ts';
import { cancelBacklog } from './queue.ts';
import { countLiveEndpoints, findEndpointRow, type EndpointRow } from './repository.ts';
import type { CreateWebhookEndpointInput, UpdateWebhookEndpointInput, WebhookEndpoint } from './schema.ts';
import { newWebhookSecret } from './signature.ts';

export const ENDPOINT_NOT_FOUND = 'Webhook endpoint not found';

/** The endpoint, its row locked first (see lockEndpoints in queue.ts). */
export async function liveEndpoint(ctx: WriteContext, id: string): Promise<EndpointRow> {
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
