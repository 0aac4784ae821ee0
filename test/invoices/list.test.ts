import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createQueryCounter } from '../helpers/queries.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, type OrderFixture } from '../helpers/orders.ts';

const list = (ctx: TestContext, as: Tenant, query = '') => ctx.request('GET', `/api/v1/invoices${query}`, { as });
const idsOf = (res: { body: { items: Array<{ id: string }> } }) => res.body.items.map((o) => o.id);

/** Invoices a fresh order of the fixture, with optional create fields; returns the invoice. */
async function invoice(ctx: TestContext, as: Tenant, f: OrderFixture, body: Record<string, unknown> = {}) {
  const order = await createOrder(ctx, as, f);
  const res = await ctx.request('POST', '/api/v1/invoices', { as, body: { orderId: order.id, ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** Invoices with pinned creation times, so that strict windows and tie-breaks can be tested to the millisecond. */
async function invoicesAt(ctx: TestContext, as: Tenant, times: string[]) {
  const f = await createFixture(ctx, as);
  const ids: string[] = [];
  for (const created of times) {
    const { id } = await invoice(ctx, as, f);
    await ctx.db
      .updateTable('invoices')
      .set({ created_at: created, updated_at: created })
      .where('id', '=', id)
      .execute();
    ids.push(id);
  }
  return ids;
}

function assertBadRequest(res: { status: number; body: any }, field: string) {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
  assert.ok(res.body.fieldErrors?.[field], JSON.stringify(res.body));
}

describeEachBackend('GET /api/v1/invoices', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/invoices', crossTenant: false });

  it("answers the envelope with defaults page 1 and limit 20: the caller's full invoices with line items, newest first", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const a = await invoice(ctx(), t, f);
    const b = await invoice(ctx(), t, f);
    await invoice(ctx(), other, await createFixture(ctx(), other));
    const res = await list(ctx(), t);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['items', 'nextCursor', 'page', 'pageSize', 'total']);
    assert.deepEqual([res.body.total, res.body.page, res.body.pageSize], [2, 1, 20]);
    assert.deepEqual(idsOf(res), [b.id, a.id]);
    assert.deepEqual(res.body.items[1], (await ctx().request('GET', `/api/v1/invoices/${a.id}`, { as: t })).body);
    assert.equal(res.body.items[0].invoiceLineItems.length, 1);
    const empty = await list(ctx(), await ctx().createTenant());
    assert.deepEqual(empty.body, { items: [], total: 0, page: 1, pageSize: 20, nextCursor: null });
  });

  it('limit is at most 100 (101 gives 400); page is at least 1; unknown query keys give 400', async () => {
    const t = await ctx().createTenant();
    assert.equal((await list(ctx(), t, '?limit=100')).status, 200);
    assertBadRequest(await list(ctx(), t, '?limit=101'), 'limit');
    assertBadRequest(await list(ctx(), t, '?page=0'), 'page');
    assertBadRequest(await list(ctx(), t, '?phase=ACTIVE'), 'phase');
  });

  it('pages in createdAt desc, id desc order, stable across pages', async () => {
    const t = await ctx().createTenant();
    const same = '2025-01-01T00:00:00.000Z';
    const ids = await invoicesAt(ctx(), t, [same, same, '2025-01-02T00:00:00.000Z', same, same]);
    const expected = [ids[2], ...[ids[0], ids[1], ids[3], ids[4]].sort().reverse()];
    const pages = [];
    for (const page of [1, 2, 3]) pages.push(...idsOf(await list(ctx(), t, `?limit=2&page=${page}`)));
    assert.deepEqual(pages, expected);
    const last = await list(ctx(), t, '?limit=2&page=3');
    assert.deepEqual([last.body.total, last.body.page, last.body.pageSize], [5, 3, 2]);
  });

  it('createdSince is strictly greater, at millisecond precision; an invalid one gives 400', async () => {
    const t = await ctx().createTenant();
    const [, fresh] = await invoicesAt(ctx(), t, ['2025-01-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z']);
    assert.deepEqual(idsOf(await list(ctx(), t, '?createdSince=2025-03-01T00:00:00.000Z')), []);
    assert.deepEqual(idsOf(await list(ctx(), t, '?createdSince=2025-02-28T23:59:59.999Z')), [fresh]);
    assert.deepEqual(
      idsOf(await list(ctx(), t, `?createdSince=${encodeURIComponent('2025-03-01T09:59:59.999+10:00')}`)),
      [fresh],
    );
    assertBadRequest(await list(ctx(), t, '?createdSince=yesterday'), 'createdSince');
  });

  it('filters by status, rejecting values outside the 11 reference statuses', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const paid = await invoice(ctx(), t, f);
    const draft = await invoice(ctx(), t, f);
    await ctx().request('PATCH', `/api/v1/invoices/${paid.id}`, { as: t, body: { status: 'PAID' } });
    assert.deepEqual(idsOf(await list(ctx(), t, '?status=PAID')), [paid.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?status=DRAFT')), [draft.id]);
    assert.equal((await list(ctx(), t, '?status=OVERDUE')).body.total, 0);
    const bad = await list(ctx(), t, '?status=SUBMITTED');
    assertBadRequest(bad, 'status');
    assert.match(bad.body.fieldErrors.status, /^Invalid enum value\. Expected 'DELETED' \| /);
  });

  it('hasArtefact: whether properties.invoiceArtefact exists (a null value counts as present)', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const withDoc = await invoice(ctx(), t, f, { properties: { invoiceArtefact: { url: 'https://x/1.pdf' } } });
    const nulled = await invoice(ctx(), t, f, { properties: { invoiceArtefact: null } });
    const other = await invoice(ctx(), t, f, { properties: { xero: { invoiceArtefact: 1 } } });
    const bare = await invoice(ctx(), t, f);
    assert.deepEqual(idsOf(await list(ctx(), t, '?hasArtefact=true')), [nulled.id, withDoc.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?hasArtefact=false')), [bare.id, other.id]);
    assert.equal((await list(ctx(), t, '?hasArtefact=true&status=PAID')).body.total, 0);
    assertBadRequest(await list(ctx(), t, '?hasArtefact=maybe'), 'hasArtefact');
  });

  it('filters by property exactly like orders, and propertyPath takes precedence over hasArtefact', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const num = await invoice(ctx(), t, f, { properties: { xero: { invoiceNo: 456 }, invoiceArtefact: 'a.pdf' } });
    const str = await invoice(ctx(), t, f, { properties: { xero: { invoiceNo: '456' } } });
    const nul = await invoice(ctx(), t, f, { properties: { xero: { invoiceNo: null } } });
    const bare = await invoice(ctx(), t, f);
    const path = '?propertyPath=xero.invoiceNo';
    assert.deepEqual(idsOf(await list(ctx(), t, path)), [nul.id, str.id, num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyExists=false`)), [bare.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyValue=456`)), [str.id, num.id]);
    // hasArtefact alone would give [num]; with propertyPath it is ignored.
    assert.deepEqual(idsOf(await list(ctx(), t, '?hasArtefact=true')), [num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyValue=456&hasArtefact=false`)), [str.id, num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyExists=false&hasArtefact=true`)), [bare.id]);
    assertBadRequest(await list(ctx(), t, `${path}&propertyValue=1&propertyExists=true`), 'propertyValue');
    assertBadRequest(await list(ctx(), t, '?propertyValue=1&hasArtefact=true'), 'propertyPath');
    assertBadRequest(await list(ctx(), t, '?propertyExists=true'), 'propertyPath');
    assertBadRequest(await list(ctx(), t, '?propertyPath=a..b'), 'propertyPath');
  });

  it('treats status DELETED as a status; includeDeleted only lists rows an operator marked deleted, and is deprecated', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const kept = await invoice(ctx(), t, f);
    const marked = await invoice(ctx(), t, f);
    await ctx().request('PATCH', `/api/v1/invoices/${marked.id}`, { as: t, body: { status: 'DELETED' } });
    assert.deepEqual(idsOf(await list(ctx(), t)), [marked.id, kept.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?status=DELETED')), [marked.id]);
    // A row an operator marked deleted in the database stays out, unless includeDeleted=true (deprecated, as earlier releases took it).
    await ctx()
      .db.updateTable('invoices')
      .set({ deleted_at: '2030-01-01T00:00:00.000Z' })
      .where('id', '=', marked.id)
      .execute();
    const res = await list(ctx(), t);
    assert.deepEqual([idsOf(res), res.body.total], [[kept.id], 1]);
    const all = await list(ctx(), t, '?includeDeleted=true');
    assert.deepEqual([idsOf(all), all.body.total], [[marked.id, kept.id], 2]);
    assert.ok(all.headers.deprecation && all.headers.sunset);
  });

  it('lists voided and live invoices of one order side by side', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const post = () => ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } });
    const first = (await post()).body;
    await ctx().request('PATCH', `/api/v1/invoices/${first.id}`, { as: t, body: { status: 'VOIDED' } });
    const second = (await post()).body;
    const res = await list(ctx(), t);
    assert.deepEqual(
      res.body.items.map((i: any) => [i.id, i.status, i.orderId]),
      [
        [second.id, 'DRAFT', order.id],
        [first.id, 'VOIDED', order.id],
      ],
    );
  });
  it('loads a page of 30 invoices with their line items in as many queries as a page of 2 (no N+1)', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 2; i++) await invoice(ctx(), t, f);
    const counter = await createQueryCounter(ctx(), t);
    const run = () => counter.measure('/api/v1/invoices?limit=100');
    const small = await run();
    for (let i = 0; i < 28; i++) await invoice(ctx(), t, f);
    const large = await run();
    await counter.close();
    assert.equal(large.body.items.length, 30);
    assert.ok(large.body.items.every((o: any) => o.invoiceLineItems.length === 1));
    assert.equal(large.n, small.n);
    assert.ok(large.n >= 3 && large.n <= 4, `${large.n} queries`);
  });

  it('answers a page past the end from its total alone', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await invoice(ctx(), t, f);
    const counter = await createQueryCounter(ctx(), t);
    const past = await counter.measure('/api/v1/invoices?page=5000&limit=10');
    await counter.close();
    assert.deepEqual({ items: past.body.items, total: past.body.total }, { items: [], total: 1 });
    assert.equal(past.n, 1, 'the count, and no page');
  });
});
