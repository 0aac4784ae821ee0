import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Decimal } from 'decimal.js';
import type { Db } from '../db/types.ts';
import { listAcknowledgements } from '../fulfilment/acknowledgement-repository.ts';
import { CreateAcknowledgementBody, LINE_DECISIONS } from '../fulfilment/acknowledgement-schema.ts';
import { acknowledgeOrder } from '../fulfilment/acknowledgement-service.ts';
import { findOrderShipmentRows, listShipments, toShipment } from '../fulfilment/shipment-repository.ts';
import { CreateShipmentBody, SHIPMENT_STATUSES, type Shipment } from '../fulfilment/shipment-schema.ts';
import { createShipment } from '../fulfilment/shipment-service.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import { ApiError } from '../lib/errors.ts';
import { startOfDay } from '../lib/time.ts';
import { bodyError, compileBody } from '../lib/validation.ts';
import { findOrder, findOrderRows } from '../orders/repository.ts';
import { ORDER_PHASES, type Order } from '../orders/schema.ts';
import type { ConsoleKit, Form } from './kit.ts';
import { buyerNamesOf } from './names.ts';
import { trackingLinks } from './tracking.ts';

const checkAcknowledgement = compileBody(CreateAcknowledgementBody);
const checkShipment = compileBody(CreateShipmentBody);
const NUMBER = /^\d{1,9}(\.\d{1,6})?$/;
const SHIPMENT_ID = /^shp_[0-9a-z]{1,40}$/;
const PAGE_SIZE = 25;

/** A form's text, trimmed and bounded; empty is absent. */
const text = (form: Form, name: string, max = 500) => {
  const value = String(form[name] ?? '').trim();
  return value === '' ? undefined : value.slice(0, max);
};
/** A number as the API takes it; anything else stays text, for the body's schema to refuse by name. */
const numberOf = (value: string | undefined) => (value !== undefined && NUMBER.test(value) ? Number(value) : value);
/** A date (YYYY-MM-DD) as the start of that day in UTC; a date-time as given. */
const instantOf = (value: string | undefined) =>
  value !== undefined && /^\d{4}-\d\d-\d\d$/.test(value) ? `${value}T00:00:00Z` : value;

function checked<T>(check: ReturnType<typeof compileBody>, body: unknown): T {
  if (!check(body)) throw bodyError(check.errors ?? [], body);
  return body as T;
}

/** What the order page shows of its fulfilment: the current acknowledgement by line, the shipments, what is left. */
export async function orderFulfilmentOf(db: Db, businessId: string, order: Order) {
  const [acknowledgements, rows] = await Promise.all([
    listAcknowledgements(db, businessId, order.id),
    findOrderShipmentRows(db, businessId, order.id),
  ]);
  const current = acknowledgements[0] ?? null;
  const shipments = rows.map(toShipment).reverse();
  const accepted = new Map(current?.lines.map((l) => [l.orderItemId, new Decimal(l.quantity)]));
  const shipped = new Map<string, Decimal>();
  for (const s of shipments)
    if (s.status !== 'VOIDED')
      for (const l of s.lines)
        shipped.set(l.orderItemId, (shipped.get(l.orderItemId) ?? new Decimal(0)).plus(l.quantity));
  const left = new Map(
    order.orderItems.map((i) => {
      const ordered = new Decimal(i.quantity);
      const may = Decimal.min(ordered, accepted.get(i.id) ?? ordered);
      return [i.id, Decimal.max(0, may.minus(shipped.get(i.id) ?? 0)).toFixed()];
    }),
  );
  const lineNumbers = new Map(order.orderItems.map((i) => [i.id, i.lineNumber]));
  return {
    acknowledgement: current,
    acknowledgements: acknowledgements.length,
    shipments: shipments.map((s) => ({ ...s, tracking: trackingLinks(s.carrier, s.trackingNumbers) })),
    left,
    lineNumbers,
    decisions: LINE_DECISIONS,
    phases: ORDER_PHASES,
  };
}

/**
 * The acknowledgement form: one row per order line, its fields named by a letter and the line
 * number (d3, q3, …) so that a large order's form fits the console's form limit; an ACCEPTED row
 * with nothing else filled in is left to the default.
 */
function acknowledgementBody(form: Form, order: Order) {
  const lines = order.orderItems.flatMap((item) => {
    const field = (name: string) => text(form, `${name}${item.lineNumber}`);
    const decision = field('d') ?? 'ACCEPTED';
    const line = {
      orderItemId: item.id,
      decision,
      quantity: numberOf(field('q')),
      price: numberOf(field('p')),
      substituteVariantId: field('s'),
      expectedAt: instantOf(field('e')),
      reason: field('r'),
    };
    const named = Object.values(line).filter((v) => v !== undefined).length > 2;
    return decision === 'ACCEPTED' && !named
      ? []
      : [Object.fromEntries(Object.entries(line).filter(([, v]) => v !== undefined))];
  });
  return {
    ...(lines.length > 0 && { lines }),
    ...(text(form, 'phase') !== undefined && { phase: text(form, 'phase') }),
    ...(text(form, 'notes') !== undefined && { notes: text(form, 'notes', 2000) }),
  };
}

/** The shipment form: each line's quantity (q3, …), in one package when it names an SSCC or weight, else as lines. */
function shipmentBody(form: Form, order: Order) {
  const lines = order.orderItems.flatMap((item) => {
    const quantity = text(form, `q${item.lineNumber}`);
    return quantity === undefined || quantity === '0' ? [] : [{ orderItemId: item.id, quantity: numberOf(quantity) }];
  });
  if (lines.length === 0) throw new ApiError('VALIDATION_ERROR', 'Enter the quantity shipped of at least one line.');
  const sscc = text(form, 'sscc', 100);
  const weight = numberOf(text(form, 'weight', 100));
  const carrier = text(form, 'carrier', 200);
  const scac = text(form, 'scac', 100);
  const tracking = (text(form, 'trackingNumbers', 2000) ?? '').split(/[\s,]+/).filter(Boolean);
  const inPackage = sscc !== undefined || weight !== undefined;
  return {
    ...(inPackage
      ? {
          packages: [
            {
              ...(sscc && { sscc }),
              ...(weight !== undefined && { weight: { value: weight, unit: form.weightUnit || 'kg' } }),
              lines,
            },
          ],
        }
      : { lines }),
    ...((carrier !== undefined || scac !== undefined) && { carrier: { name: carrier ?? '', ...(scac && { scac }) } }),
    ...(text(form, 'service') !== undefined && { service: text(form, 'service', 200) }),
    ...(tracking.length > 0 && { trackingNumbers: tracking }),
    ...(text(form, 'shippedAt') !== undefined && { shippedAt: instantOf(text(form, 'shippedAt')) }),
    ...(text(form, 'externalReference') !== undefined && { externalReference: text(form, 'externalReference', 200) }),
  };
}

/** `after` of the shipments page: the last row's createdAt and id, as the next link carries them. */
function readAfter(raw: string | undefined) {
  if (raw === undefined || raw === '') return undefined;
  const [createdAt, id] = raw.split(' ');
  if (!id || !SHIPMENT_ID.test(id) || Number.isNaN(Date.parse(createdAt)))
    throw new ApiError('VALIDATION_ERROR', 'That page link is not one this page made: start from the first page.');
  return { createdAt: new Date(createdAt).toISOString(), id };
}

/**
 * Fulfilment in the console: acknowledging an order and recording a shipment (owners and admins,
 * through the API's services as the signed-in user), and the Shipments page (everyone).
 */
export function registerFulfilmentPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, actorOf, idOf, queryOf, problem, act } = kit;
  const { db, writes } = kit.deps;
  const editor = (request: FastifyRequest, reply: FastifyReply) => signedIn(request, reply, ['owner', 'admin']);
  const orderOf = async (businessId: string, id: string) => {
    const order = await findOrder(db, businessId, id);
    if (!order) throw new ApiError('NOT_FOUND', 'No such order.');
    return order;
  };

  app.post('/console/orders/:id/acknowledgements', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const order = await orderOf(user.businessId, idOf(request));
    const back = `/console/orders/${order.id}`;
    return act(reply, user, back, async () => {
      const body = checked<Parameters<typeof acknowledgeOrder>[2]>(
        checkAcknowledgement,
        acknowledgementBody(request.body as Form, order),
      );
      const ack = await writes.run(actorOf(user), (ctx) => acknowledgeOrder(ctx, order.id, body));
      return { notice: `Acknowledged: ${ack.decision.replaceAll('_', ' ').toLowerCase()}.` };
    });
  });

  app.post('/console/orders/:id/shipments', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const order = await orderOf(user.businessId, idOf(request));
    const back = `/console/orders/${order.id}`;
    return act(reply, user, back, async () => {
      const body = checked<Parameters<typeof createShipment>[2]>(
        checkShipment,
        shipmentBody(request.body as Form, order),
      );
      const { resource } = await writes.run(actorOf(user), (ctx) => createShipment(ctx, order.id, body));
      const units = resource.lines.reduce((sum, l) => sum.plus(l.quantity), new Decimal(0)).toFixed();
      return { notice: `Recorded shipment ${resource.id}: ${units} units.` };
    });
  });

  app.get('/console/shipments', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const q = queryOf(request);
    const filters = Object.fromEntries(Object.entries(q).filter(([k, v]) => v && k !== 'after')) as Record<
      string,
      string
    >;
    const view = {
      title: 'Shipments',
      section: 'shipments',
      q,
      statuses: SHIPMENT_STATUSES,
      shipments: [] as unknown[],
    };
    try {
      const property = readPropertyFilter({
        propertyPath: q.propertyPath || undefined,
        propertyValue: q.propertyValue || undefined,
      });
      if (q.status && !SHIPMENT_STATUSES.includes(q.status as never))
        throw new ApiError('VALIDATION_ERROR', 'Unknown status.');
      if (q.orderId && !/^ord_[0-9a-z]{1,40}$/.test(q.orderId))
        throw new ApiError('VALIDATION_ERROR', 'An order id looks like ord_…');
      const since = q.since ? startOfDay(q.since) : undefined;
      if (since === null) throw new ApiError('VALIDATION_ERROR', 'Changed since is a date.');
      const after = readAfter(q.after);
      const listed = await listShipments(db, user.businessId, {
        page: 1,
        limit: PAGE_SIZE,
        after,
        orderId: q.orderId || undefined,
        status: q.status || undefined,
        modifiedSince: since,
        property,
      });
      const orders = await findOrderRows(db, user.businessId, [...new Set(listed.items.map((s) => s.orderId))]);
      const buyers = await buyerNamesOf(
        db,
        user.businessId,
        [...orders.values()].map((o) => o.partnership_id),
      );
      const shipments = listed.items.map((s: Shipment) => {
        const order = orders.get(s.orderId);
        return {
          ...s,
          reference: order?.internal_reference ?? s.orderId,
          buyer: order ? (buyers.get(order.partnership_id) ?? null) : null,
          packageCount: s.packages.length,
          tracking: trackingLinks(s.carrier, s.trackingNumbers),
        };
      });
      const next = listed.next
        ? `/console/shipments?${new URLSearchParams({ ...filters, after: `${listed.next.createdAt} ${listed.next.id}` })}`
        : null;
      const first = after ? `/console/shipments?${new URLSearchParams(filters)}` : null;
      return page(reply, 'shipments.eta', user, { ...view, shipments, total: listed.total, next, first });
    } catch (error) {
      return page(reply.code(400), 'shipments.eta', user, {
        ...view,
        total: 0,
        next: null,
        first: null,
        error: problem(error),
      });
    }
  });
}
