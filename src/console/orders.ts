import type { FastifyInstance } from 'fastify';
import { lastSequence } from '../log/events.ts';
import { listLatestEvents } from '../events/repository.ts';
import { RESOURCE_TYPES } from '../events/schema.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import { ApiError } from '../lib/errors.ts';
import { startOfDay, toIso } from '../lib/time.ts';
import { listOrders } from '../orders/read-model/index.ts';
import { findOrder, findOrderRows } from '../orders/repository.ts';
import { ORDER_PHASES, ORDER_STATUSES } from '../orders/schema.ts';
import type { Role } from '../users/table.ts';
import type { ConsoleKit } from './kit.ts';
import { actorNamesOf, buyerNamesOf, itemNamesOf } from './names.ts';
import { orderFulfilmentOf } from './fulfilment.ts';

/** `data.changes` as lines: each path with from and to, child lists as counts; paths empty before and after are left out. */
export function flattenChanges(
  changes: Record<string, unknown>,
  prefix = '',
): Array<{ path: string; from: string; to: string }> {
  const out: Array<{ path: string; from: string; to: string }> = [];
  const show = (v: unknown) =>
    v === undefined || v === null ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v);
  for (const [key, value] of Object.entries(changes)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const change = value as Record<string, unknown>;
    if (change && typeof change === 'object' && ('from' in change || 'to' in change)) {
      if ((change.from ?? null) === null && (change.to ?? null) === null) continue;
      out.push({ path, from: show(change.from), to: show(change.to) });
    } else if (
      change &&
      typeof change === 'object' &&
      ('created' in change || 'updated' in change || 'deleted' in change)
    ) {
      const count = (k: string) => (Array.isArray(change[k]) ? (change[k] as unknown[]).length : 0);
      out.push({
        path,
        from: '',
        to: `${count('created')} created, ${count('updated')} updated, ${count('deleted')} deleted`,
      });
    } else if (change && typeof change === 'object') out.push(...flattenChanges(change, path));
  }
  return out;
}

/** Only resources of pages the role may open: viewers never see keys, webhooks or the team. */
const HIDDEN_FROM: Record<Role, string[]> = {
  owner: [],
  admin: ['user'],
  viewer: ['api_key', 'webhook_endpoint', 'user'],
};

/** Orders and events (every role): the API's order list and filters, an order with its timeline, the live feed. */
export function registerOrderPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, idOf, queryOf, typesOf, problem, checkTypes } = kit;
  const { db } = kit.deps;
  app.get('/console/orders', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const q = queryOf(request);
    const pageNumber = Math.max(1, Math.min(1_000_000, Number.parseInt(q.page ?? '1', 10) || 1));
    const view = {
      title: 'Orders',
      section: 'orders',
      q,
      phases: ORDER_PHASES,
      statuses: ORDER_STATUSES,
      orders: [] as unknown[],
      total: 0,
      page: pageNumber,
      pages: 0,
    };
    const kept = Object.fromEntries(Object.entries(q).filter(([k, v]) => v && k !== 'page')) as Record<string, string>;
    const link = (n: number) => `/console/orders?${new URLSearchParams({ ...kept, page: String(n) })}`;
    try {
      const property = readPropertyFilter({
        propertyPath: q.propertyPath || undefined,
        propertyValue: q.propertyValue || undefined,
        propertyExists: q.propertyExists === 'true' ? true : q.propertyExists === 'false' ? false : undefined,
      });
      if (q.phase && !ORDER_PHASES.includes(q.phase as never)) throw new ApiError('VALIDATION_ERROR', 'Unknown phase.');
      if (q.status && !ORDER_STATUSES.includes(q.status as never))
        throw new ApiError('VALIDATION_ERROR', 'Unknown status.');
      const since = q.since ? startOfDay(q.since) : undefined;
      if (since === null) throw new ApiError('VALIDATION_ERROR', 'Changed since is a date.');
      const limit = 25;
      const listed = await listOrders(db, user.businessId, {
        page: pageNumber,
        limit,
        includeDeleted: false,
        phase: q.phase || undefined,
        status: q.status || undefined,
        property,
        modifiedSince: since,
      });
      const rows = await findOrderRows(
        db,
        user.businessId,
        listed.items.map((o) => o.id),
      );
      const found = listed.items.map((o) => rows.get(o.id)!);
      const buyers = await buyerNamesOf(
        db,
        user.businessId,
        found.map((r) => r.partnership_id),
      );
      const orders = found.map((r) => ({
        id: r.id,
        reference: r.internal_reference,
        externalReference: r.external_reference,
        buyer: buyers.get(r.partnership_id) ?? null,
        phase: r.phase,
        status: r.status,
        total: r.total_amount,
        currency: r.currency,
        expectedDelivery: toIso(r.expected_delivery_at),
        updated: toIso(r.updated_at),
      }));
      return page(reply, 'orders.eta', user, {
        ...view,
        orders,
        total: listed.total,
        pages: Math.ceil(listed.total / limit),
        link,
      });
    } catch (error) {
      return page(reply.code(400), 'orders.eta', user, { ...view, link, error: problem(error) });
    }
  });

  app.get('/console/orders/:id', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const order = await findOrder(db, user.businessId, idOf(request));
    if (!order) throw new ApiError('NOT_FOUND', 'No such order.');
    // The latest 200 events (all retention kept), oldest first.
    const history = await listLatestEvents(db, user.businessId, {
      limit: 200,
      resourceType: 'order',
      resourceId: order.id,
    });
    const events = history.reverse().map((e) => ({ ...e, changes: flattenChanges(e.data.changes ?? {}) }));
    const [buyers, items, names, fulfilment] = await Promise.all([
      buyerNamesOf(db, user.businessId, [order.partnershipId]),
      itemNamesOf(
        db,
        user.businessId,
        order.orderItems.map((i) => i.itemListEntry.itemVariant.itemId),
      ),
      actorNamesOf(db, user.businessId),
      orderFulfilmentOf(db, user.businessId, order),
    ]);
    return page(reply, 'order.eta', user, {
      fulfilment,
      canEdit: user.role !== 'viewer',
      title: `Order ${order.internalReference}`,
      section: 'orders',
      order,
      events,
      partial: history.length === 200,
      buyer: buyers.get(order.partnershipId) ?? null,
      itemNames: items,
      names,
    });
  });

  // The feed's latest, newest first, filtered; the page refreshes itself (htmx).
  app.get('/console/events', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const q = queryOf(request);
    const self = `/console/events?${new URLSearchParams(Object.entries(q).filter(([, v]) => v) as [string, string][])}`;
    const resourceTypes = RESOURCE_TYPES.filter((t) => !HIDDEN_FROM[user.role].includes(t));
    const view = {
      title: 'Events',
      section: 'events',
      q,
      self,
      resourceTypes,
      events: [] as unknown[],
      lastSequence: 0,
      names: new Map<string, string>(),
    };
    try {
      const types = checkTypes(typesOf(q.types));
      if (q.resourceId && !/^[A-Za-z0-9_-]{1,64}$/.test(q.resourceId))
        throw new ApiError('VALIDATION_ERROR', 'A resource id is letters, digits, _ and -.');
      if (q.resourceType && !resourceTypes.includes(q.resourceType as never))
        throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered resource types.');
      const latest = await lastSequence(db, user.businessId);
      const events = await listLatestEvents(db, user.businessId, {
        limit: 100,
        types,
        resourceType: q.resourceType || undefined,
        resourceId: q.resourceId || undefined,
        hiddenResourceTypes: HIDDEN_FROM[user.role],
      });
      return page(reply, 'events.eta', user, {
        ...view,
        events,
        lastSequence: latest,
        names: await actorNamesOf(db, user.businessId),
      });
    } catch (error) {
      return page(reply.code(400), 'events.eta', user, { ...view, error: problem(error) });
    }
  });
}
