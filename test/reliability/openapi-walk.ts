import { sql } from 'kysely';
import type { TestContext, Tenant } from '../helpers/context.ts';
import { dereference } from '../helpers/openapi-check.ts';
import { importNow } from '../helpers/imports.ts';

/** One operation of /openapi.json. */
export interface Operation {
  method: string;
  path: string;
  params: Array<{ in: string; name: string; schema?: any; required?: boolean }>;
  body?: any;
}

export function operationsOf(document: any): Operation[] {
  // Schemas are read directly below, so the document's named components are inlined first.
  const doc = dereference(document);
  return Object.entries<Record<string, any>>(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      params: op.parameters ?? [],
      body: op.requestBody?.content?.['application/json']?.schema,
    })),
  );
}

export interface Fixture {
  itemId: string;
  variantId: string;
  buyerId: string;
  partnershipId: string;
  listId: string;
  orderId: string;
  invoiceId?: string;
  webhookEndpointId?: string;
  importId?: string;
  orderItemId: string;
  shipmentId?: string;
}

/** One of each resource: an item, a buyer, a price list, an order and (when the build has them) an invoice. */
export async function createResources(ctx: TestContext, as: Tenant): Promise<Fixture> {
  const ok = (r: { status: number; body: any }, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const item = ok(
    await ctx.request('POST', '/api/v1/items', {
      as,
      body: {
        item: { name: `Widget ${Math.random()}`, properties: { colour: 'blue' } },
        variants: [{ variantName: 'V', currency: 'AUD', price: 10, cost: 4 }],
      },
    }),
    'item',
  );
  const buyer = ok(
    await ctx.request('POST', '/api/v1/buyers', {
      as,
      body: {
        buyer: { name: 'Acme' },
        emails: [{ email: 'a@example.com' }],
        phones: [{ phone: '+61 2 5550 1234' }],
        locations: [{ addressLine1: '1 Main St' }],
      },
    }),
    'buyer',
  );
  const list = ok(
    await ctx.request('POST', '/api/v1/pricing', {
      as,
      body: {
        itemListData: { label: `List ${Math.random()}` },
        entries: [{ itemVariantId: item.variantIds[0], overrideFlatPrice: 9 }],
      },
    }),
    'price list',
  );
  const order = ok(
    await ctx.request('POST', `/api/v1/buyers/${buyer.id}/orders`, {
      as,
      body: {
        expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
        orderItems: [{ itemVariantId: item.variantIds[0], quantity: 2 }],
        properties: { erp: { no: 1 } },
      },
    }),
    'order',
  );
  const doc = (await ctx.request('GET', '/openapi.json')).body;
  let invoiceId: string | undefined;
  if (doc.paths['/api/v1/invoices']?.post) {
    invoiceId = ok(await ctx.request('POST', '/api/v1/invoices', { as, body: { orderId: order.id } }), 'invoice').id;
  }
  let webhookEndpointId: string | undefined;
  if (doc.paths['/api/v1/webhook-endpoints']?.post) {
    // Paused: it never sends anything out of a test.
    webhookEndpointId = ok(
      await ctx.request('POST', '/api/v1/webhook-endpoints', {
        as,
        body: { url: 'https://hooks.example.com/supplyline', eventTypes: ['order.*'], status: 'paused' },
      }),
      'webhook endpoint',
    ).id;
  }
  let shipmentId: string | undefined;
  if (doc.paths['/api/v1/orders/{id}/shipments']?.post) {
    const lines = [{ orderItemId: order.orderItems[0].id, quantity: 1 }];
    shipmentId = ok(
      await ctx.request('POST', `/api/v1/orders/${order.id}/shipments`, { as, body: { lines } }),
      'shipment',
    ).id;
  }
  let importId: string | undefined;
  if (doc.paths['/api/v1/imports']?.post) {
    // Applied in the background: done before anything looks at the business.
    importId = (
      await importNow(ctx, as, [{ op: 'patch', resource: 'item', id: item.id, data: { description: 'Imported' } }])
    ).id;
  }
  return {
    itemId: item.id,
    variantId: item.variantIds[0],
    buyerId: buyer.id,
    partnershipId: buyer.partnershipId,
    listId: list.id,
    orderId: order.id,
    invoiceId,
    webhookEndpointId,
    importId,
    orderItemId: order.orderItems[0].id,
    shipmentId,
  };
}

/** The id of the fixture's resource that an operation's `{id}` names. */
export function idFor(path: string, f: Fixture): string | undefined {
  if (path.startsWith('/api/v1/items/')) return f.itemId;
  if (path.startsWith('/api/v1/buyers/')) return f.buyerId;
  if (path.startsWith('/api/v1/pricing/')) return f.listId;
  if (path.startsWith('/api/v1/orders/')) return f.orderId;
  if (path.startsWith('/api/v1/invoices/')) return f.invoiceId;
  if (path.startsWith('/api/v1/webhook-endpoints/')) return f.webhookEndpointId;
  if (path.startsWith('/api/v1/imports/')) return f.importId;
  if (path.startsWith('/api/v1/shipments/')) return f.shipmentId;
  return undefined;
}

export const urlFor = (op: Operation, id: string | undefined, query = '') =>
  op.path.replace('{id}', encodeURIComponent(id ?? 'missing')) + (query ? `?${query}` : '');

/** Every row of every table that carries the business's id (and its business row), sorted, as text. */
export async function snapshotBusiness(ctx: TestContext, businessId: string): Promise<string> {
  // Only this database's own tables: other runs create and drop schemas beside it at any time.
  const tables =
    ctx.backend === 'postgres'
      ? Object.values(
          (
            await sql<{
              table_name: string;
              column_name: string;
            }>`select table_name, column_name from information_schema.columns
        where table_schema = current_schema()`.execute(ctx.db)
          ).rows.reduce<Record<string, { name: string; columns: Array<{ name: string }> }>>((acc, r) => {
            (acc[r.table_name] ??= { name: r.table_name, columns: [] }).columns.push({ name: r.column_name });
            return acc;
          }, {}),
        )
      : (await ctx.db.introspection.getTables()).filter((t) => !t.isView);
  const out: Record<string, unknown[]> = {};
  for (const table of tables) {
    const columns = table.columns.map((c) => c.name);
    // Idempotency records of refused requests, the audit trail's record of them, and a key's last
    // use are bookkeeping, not business data.
    if (table.name === 'idempotency_keys' || table.name === 'audit_events') continue;
    const column = columns.includes('business_id') ? 'business_id' : table.name === 'businesses' ? 'id' : null;
    if (!column) continue;
    const rows = await (ctx.db as any).selectFrom(table.name).selectAll().where(column, '=', businessId).execute();
    out[table.name] = rows
      .map((r: Record<string, unknown>) => {
        const { last_used_at: _ignored, ...rest } = r;
        return JSON.stringify(rest);
      })
      .sort();
  }
  return JSON.stringify(out);
}

const encodeFirst = (segment: string) => `%${segment.charCodeAt(0).toString(16)}${segment.slice(1)}`;
const encodeAll = (segment: string) =>
  [...segment].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');

/** Every other way of writing the same path: each must reach authentication, or no route at all. */
export function spellingsOf(path: string): string[] {
  const [, api, version, ...rest] = path.split('/');
  const tail = rest.join('/');
  const up = (s: string) => s.toUpperCase();
  return [
    `/${encodeFirst(api)}/${version}/${tail}`,
    `/${api.slice(0, 2)}%${api.charCodeAt(2).toString(16)}/${version}/${tail}`,
    `/${api}/${encodeAll(version)}/${tail}`,
    `/${encodeAll(api)}/${encodeAll(version)}/${rest.map(encodeAll).join('/')}`,
    `/${api}/${version}/${encodeFirst(rest[0])}${rest.length > 1 ? `/${rest.slice(1).join('/')}` : ''}`,
    `/${api}%2F${version}/${tail}`,
    `http://localhost/${api}/${version}/${tail}`,
    `HTTP://LOCALHOST/${api}/${version}/${tail}`,
    `hTtP://Example.COM:80/${api}/${version}/${tail}`,
    `https://localhost/${encodeFirst(api)}/${version}/${tail}`,
    `//${api}/${version}/${tail}`,
    `/${api}//${version}/${tail}`,
    `/${api}/${version}//${tail}`,
    `/x/../${api}/${version}/${tail}`,
    `/${api}/./${version}/${tail}`,
    `/${api}/${version}/./${tail}`,
    `/%2e/${api}/${version}/${tail}`,
    `/${up(api)}/${version}/${tail}`,
    `/${api.charAt(0).toUpperCase()}${api.slice(1)}/${up(version)}/${tail}`,
    `/${api}/${version}/${up(tail)}`,
    `/${api}/${version}/${tail}/`,
    `/${api}/${version}/${tail};x=1`,
    `/${api}/${version}/${tail}?%61=1`,
  ];
}
