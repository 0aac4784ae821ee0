import { notFound, validationError } from '../lib/errors.ts';
import { Id } from '../http/schema.ts';
import { Type } from 'typebox';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { sendRendered } from '../http/rendered.ts';
import { filterTakes } from '../log/filter.ts';
import { readAgain } from '../db/replicas/index.ts';
import { eventPageJson, renderEvents, resourceExists, type HistoryResource } from './repository.ts';
import {
  EventPageResponse,
  eventsAheadResponse,
  eventsGoneResponse,
  ListEventsQuery,
  ResourceEventsQuery,
  unknownEventType,
} from './schema.ts';

const tags = ['Events'];
const gone = eventsGoneResponse('after');
const ahead = eventsAheadResponse('after');

/** The resources with a history, their paths and their 404 texts. */
const HISTORIES: Array<{ resource: HistoryResource; path: string; tag: string; notFound: string; id: string }> = [
  { resource: 'order', path: 'orders', tag: 'Orders', notFound: 'Order not found', id: 'ord' },
  { resource: 'item', path: 'items', tag: 'Items', notFound: 'Item not found', id: 'itm' },
  { resource: 'buyer', path: 'buyers', tag: 'Buyers', notFound: 'Buyer not found', id: 'phm' },
  { resource: 'invoice', path: 'invoices', tag: 'Invoices', notFound: 'Invoice not found', id: 'inv' },
  { resource: 'shipment', path: 'shipments', tag: 'Shipments', notFound: 'Shipment not found', id: 'shp' },
];

/** A history's path parameter, with an id of its own resource as the example. */
const historyParams = (resource: string, prefix: string) =>
  Type.Object({
    id: Id(`${resource[0].toUpperCase()}${resource.slice(1)} id`, `${prefix}_01jd5x8m2k3n4p5q6r7s8t9v0w`),
  });

export async function eventRoutes(app: ApiInstance, { db, events }: RouteDeps) {
  app.get(
    '/events',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listEvents',
        summary: 'The change feed: every change of the business, in order, without gaps',
        description:
          'Events are numbered per business from 1 without gaps. Start with after=0 (or the sequence an export ' +
          'names), then ask again with after=lastSequence. A reader that asked for events after N never later finds one at ' +
          'or below N. With types/resourceType/resourceId, lastSequence still moves past the events the filters skip.',
        querystring: ListEventsQuery,
        response: { 200: EventPageResponse, 409: ahead, 410: gone },
      },
    },
    async (request, reply) => {
      const { after, limit, types, resourceType, resourceId, wait = 0 } = request.query;
      const filter = { after, limit, types: types?.split(','), resourceType, resourceId };
      const unknown = filter.types && unknownEventType(filter.types);
      if (unknown) throw validationError({ types: unknown });
      const send = (page: Awaited<ReturnType<typeof renderEvents>>) => sendRendered(reply, eventPageJson(page));
      if (wait === 0) return send(await renderEvents(db, request.businessId, filter));
      // Subscribe, then read, so a commit in between still wakes it; ends early when the client goes or the server stops.
      const deadline = Date.now() + wait * 1000;
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once('close', onClose);
      try {
        for (;;) {
          const next = events.subscribe(request.businessId, Math.max(0, deadline - Date.now()), gone.signal, (event) =>
            filterTakes(filter, event),
          );
          const page = await renderEvents(db, request.businessId, filter).catch((error) => {
            next.cancel();
            throw error;
          });
          if (page.items.length > 0 || !next.ready || Date.now() >= deadline) {
            next.cancel();
            return send(page);
          }
          await next.woken;
          // The commit that woke it came after the request began: read where that commit is.
          readAgain();
          if (gone.signal.aborted || Date.now() >= deadline)
            return send(await renderEvents(db, request.businessId, filter));
        }
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );

  for (const history of HISTORIES) {
    app.get(
      `/${history.path}/:id/events`,
      {
        config: { extension: true },
        schema: {
          tags: [history.tag],
          operationId: `list${history.tag.slice(0, -1)}Events`,
          summary: `One ${history.resource}'s history: its events, oldest first`,
          description: `Every event of the ${history.resource}, also after it was deleted, paged like GET /api/v1/events.`,
          params: historyParams(history.resource, history.id),
          querystring: ResourceEventsQuery,
          response: { 200: EventPageResponse, 409: ahead, 410: gone },
        },
      },
      async (request, reply) => {
        const { id } = request.params;
        if (!(await resourceExists(db, request.businessId, history.resource, id))) throw notFound(history.notFound);
        return sendRendered(
          reply,
          eventPageJson(
            await renderEvents(db, request.businessId, {
              ...request.query,
              resourceType: history.resource,
              resourceId: id,
            }),
          ),
        );
      },
    );
  }
}
