import { Type } from 'typebox';
import { notFound } from '../lib/errors.ts';
import { IdParams } from '../http/schema.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { listEvents, resourceExists, type HistoryResource } from './repository.ts';
import { EventPageResponse, ListEventsQuery, ResourceEventsQuery } from './schema.ts';

const tags = ['Events'];
const gone = Type.Unsafe<unknown>({ $ref: 'ErrorResponse#', description: '`after` is below the retained events; the message names the oldest retained sequence' });

/** The resources with a history, their paths and their 404 texts. */
const HISTORIES: Array<{ resource: HistoryResource; path: string; tag: string; notFound: string }> = [
  { resource: 'order', path: 'orders', tag: 'Orders', notFound: 'Order not found' },
  { resource: 'item', path: 'items', tag: 'Items', notFound: 'Item not found' },
  { resource: 'buyer', path: 'buyers', tag: 'Buyers', notFound: 'Buyer not found' },
  { resource: 'invoice', path: 'invoices', tag: 'Invoices', notFound: 'Invoice not found' },
];

export async function eventRoutes(app: ApiInstance, { db }: RouteDeps) {
  app.get('/events', {
    config: { extension: true },
    schema: {
      tags, operationId: 'listEvents', summary: 'The change feed: every change of the business, in order, without gaps',
      description: 'Events are numbered per business from 1 without gaps. Start with after=0 (or the sequence an export '
        + 'names), then ask again with after=lastSequence. A reader that asked for events after N never later finds one at '
        + 'or below N. With types/resourceType/resourceId, lastSequence still moves past the events the filters skip.',
      querystring: ListEventsQuery, response: { 200: EventPageResponse, 410: gone },
    },
  }, async (request) => {
    const { after, limit, types, resourceType, resourceId } = request.query;
    return listEvents(db, request.businessId, { after, limit, types: types?.split(','), resourceType, resourceId });
  });

  for (const history of HISTORIES) {
    app.get(`/${history.path}/:id/events`, {
      config: { extension: true },
      schema: {
        tags: [history.tag], operationId: `list${history.tag.slice(0, -1)}Events`,
        summary: `One ${history.resource}'s history: its events, oldest first`,
        description: `Every event of the ${history.resource}, also after it was deleted, paged like GET /api/v1/events.`,
        params: IdParams, querystring: ResourceEventsQuery, response: { 200: EventPageResponse, 410: gone },
      },
    }, async (request) => {
      const { id } = request.params;
      if (!(await resourceExists(db, request.businessId, history.resource, id))) throw notFound(history.notFound);
      return listEvents(db, request.businessId, { ...request.query, resourceType: history.resource, resourceId: id });
    });
  }
}
