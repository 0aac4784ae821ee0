import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Db } from '../../src/db/types.ts';
import { findEffectiveEntries } from '../../src/pricing/effective-price.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { assertUnauthorized, securityCases } from '../helpers/security.ts';

async function createVariants(ctx: TestContext, as: Tenant, variants: Array<Record<string, unknown>> = [{}]) {
  const res = await ctx.request('POST', '/api/v1/items', {
    as,
    body: {
      item: { name: 'Widget' },
      variants: variants.map((v, i) => ({ variantName: `V${i}`, currency: 'AUD', price: 10, cost: 4, ...v })),
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; variantIds: string[] };
}

async function createPartnership(ctx: TestContext, as: Tenant): Promise<{ id: string; partnershipId: string }> {
  const res = await ctx.request('POST', '/api/v1/buyers', { as, body: { buyer: { name: 'Buyer' } } });
  assert.equal(res.status, 201);
  return res.body;
}

async function createList(ctx: TestContext, as: Tenant, body: Record<string, unknown>) {
  const res = await ctx.request('POST', '/api/v1/pricing', { as, body: { itemListData: { label: 'VIP' }, ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

const getList = (ctx: TestContext, as: Tenant, id: string) => ctx.request('GET', `/api/v1/pricing/${id}`, { as });

async function countLists(ctx: TestContext, t: Tenant): Promise<number> {
  const row = await ctx.db
    .selectFrom('item_lists')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', t.businessId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describeEachBackend('POST /api/v1/pricing', (ctx) => {
  securityCases(ctx, {
    method: 'POST',
    url: () => '/api/v1/pricing',
    body: { itemListData: { label: 'Intruder' } },
    crossTenant: false,
  });

  it('missing, wrong and revoked credentials give 401', async () => {
    const owner = await ctx().createTenant();
    const body = { itemListData: { label: 'X' } };
    assertUnauthorized(await ctx().request('POST', '/api/v1/pricing', { body }));
    assertUnauthorized(
      await ctx().request('POST', '/api/v1/pricing', {
        body,
        headers: { 'x-business-id': owner.businessId, 'x-api-key': 'f'.repeat(32) },
      }),
    );
    const spare = await ctx().addKey(owner);
    await ctx().revokeKey(owner, spare.keyId);
    assertUnauthorized(await ctx().request('POST', '/api/v1/pricing', { as: spare, body }));
    assert.equal(await countLists(ctx(), owner), 1);
  });

  it('creates a list with entries and partnerships; GET shows it with numbers and defaults', async () => {
    const t = await ctx().createTenant();
    const item = await createVariants(ctx(), t, [{}, {}]);
    const buyer = await createPartnership(ctx(), t);
    const res = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: {
        itemListData: {
          label: 'Wholesale',
          globalPriceFactor: 0.85,
          startDate: '2025-01-01T10:00:00+10:00',
          endDate: '2030-01-01T00:00:00Z',
        },
        entries: [
          { itemVariantId: item.variantIds[0], overrideFlatPrice: 7.25, currency: 'NZD' },
          { itemVariantId: item.variantIds[1] },
        ],
        partnerships: [buyer.partnershipId],
      },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'success']);
    assert.match(res.body.id, /^list_/);
    const got = await getList(ctx(), t, res.body.id);
    assert.equal(got.status, 200);
    const { entries, ...list } = got.body;
    assert.deepEqual(
      { ...list, createdAt: undefined, updatedAt: undefined },
      {
        id: res.body.id,
        label: 'Wholesale',
        status: 'ACTIVE',
        isDefault: false,
        globalPriceFactor: 0.85,
        globalCostFactor: 1,
        startDate: '2025-01-01T00:00:00.000Z',
        endDate: '2030-01-01T00:00:00.000Z',
        partnershipIds: [buyer.partnershipId],
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    assert.deepEqual(
      entries.map((e: any) => [e.itemVariantId, e.itemId, e.overrideFlatPrice, e.currency]),
      [
        [item.variantIds[0], item.id, 7.25, 'NZD'],
        [item.variantIds[1], item.id, null, null],
      ],
    );
    assert.ok(entries.every((e: any) => e.id.startsWith('ile_')));
    assert.equal((await ctx().request('GET', `/api/v1/buyers/${buyer.id}`, { as: t })).body.itemListId, res.body.id);
  });

  it('accepts the four statuses and rejects others, bad factors, prices, currencies and dates by path', async () => {
    const t = await ctx().createTenant();
    for (const status of ['ACTIVE', 'INACTIVE', 'DRAFT', 'ARCHIVED']) {
      assert.equal(
        (await getList(ctx(), t, await createList(ctx(), t, { itemListData: { label: status, status } }))).body.status,
        status,
      );
    }
    const { variantIds } = await createVariants(ctx(), t);
    const bad = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: {
        itemListData: { status: 'LIVE', globalPriceFactor: 0, globalCostFactor: -1, isDefault: true },
        entries: [{ itemVariantId: variantIds[0], overrideFlatPrice: -0.01, currency: 'XXX' }],
      },
    });
    assert.equal(bad.status, 400);
    const f = bad.body.fieldErrors;
    assert.equal(f['itemListData.label'], 'Required');
    assert.equal(
      f['itemListData.status'],
      "Invalid enum value. Expected 'ACTIVE' | 'INACTIVE' | 'DRAFT' | 'ARCHIVED', received 'LIVE'",
    );
    assert.ok(f['itemListData.globalPriceFactor'] && f['itemListData.globalCostFactor']);
    assert.equal(f['itemListData.isDefault'], 'Unrecognized key');
    assert.ok(f['entries.0.overrideFlatPrice'] && f['entries.0.currency']);
    const dates = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: { itemListData: { label: 'X', startDate: '2025-02-01T00:00:00Z', endDate: '2025-01-31T23:59:59Z' } },
    });
    assert.equal(dates.status, 400);
    assert.deepEqual(dates.body.fieldErrors, { 'itemListData.endDate': 'Must not be before startDate' });
    assert.equal(await countLists(ctx(), t), 5);
  });

  it('rejects unknown, foreign, deleted and repeated variants and partnerships, one error each, writing nothing', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const mine = await createVariants(ctx(), t, [{}, {}]);
    const theirs = await createVariants(ctx(), other);
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${mine.id}`, { as: t })).status, 204);
    const live = await createVariants(ctx(), t);
    const partner = await createPartnership(ctx(), t);
    const foreignPartner = await createPartnership(ctx(), other);
    const res = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: {
        itemListData: { label: 'Bad' },
        entries: [
          { itemVariantId: live.variantIds[0] },
          { itemVariantId: 'var_missing' },
          { itemVariantId: theirs.variantIds[0] },
          { itemVariantId: mine.variantIds[1] },
          { itemVariantId: live.variantIds[0] },
        ],
        partnerships: [foreignPartner.partnershipId, partner.partnershipId, 'prt_missing', 'phm_a_buyers_id'],
      },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
    assert.deepEqual(res.body.fieldErrors, {
      'entries.1.itemVariantId': 'Item variant not found',
      'entries.2.itemVariantId': 'Item variant not found',
      'entries.3.itemVariantId': 'Item variant not found',
      'entries.4.itemVariantId': 'Item variant is listed more than once',
      'partnerships.0': 'Partnership not found',
      'partnerships.2': 'Partnership not found',
      'partnerships.3': "Partnership not found: this is a buyer's id; send the buyer's partnershipId (prt_…)",
    });
    assert.ok(!JSON.stringify(res.body).includes(other.businessId));
    assert.equal(await countLists(ctx(), t), 1);
    const partnership = await ctx()
      .db.selectFrom('partnerships')
      .select('item_list_id')
      .where('id', '=', foreignPartner.partnershipId)
      .executeTakeFirstOrThrow();
    assert.notEqual(partnership.item_list_id, null);
    assert.equal(
      (await ctx().request('GET', `/api/v1/buyers/${foreignPartner.id}`, { as: other })).body.itemListId,
      partnership.item_list_id,
    );
  });

  it("replaces a partnership's list on assignment, and never touches the default list", async () => {
    const t = await ctx().createTenant();
    const { variantIds } = await createVariants(ctx(), t);
    const partner = await createPartnership(ctx(), t);
    const defaultId = (await ctx().request('GET', `/api/v1/buyers/${partner.id}`, { as: t })).body.itemListId;
    const defaultBefore = (await getList(ctx(), t, defaultId)).body;
    const buyerBefore = (await ctx().request('GET', `/api/v1/buyers/${partner.id}`, { as: t })).body;
    await new Promise((r) => setTimeout(r, 5));
    const first = await createList(ctx(), t, {
      entries: [{ itemVariantId: variantIds[0], overrideFlatPrice: 5 }],
      partnerships: [partner.partnershipId],
    });
    const second = await createList(ctx(), t, { partnerships: [partner.partnershipId, partner.partnershipId] });
    assert.deepEqual((await getList(ctx(), t, first)).body.partnershipIds, []);
    assert.deepEqual((await getList(ctx(), t, second)).body.partnershipIds, [partner.partnershipId]);
    const buyerAfter = (await ctx().request('GET', `/api/v1/buyers/${partner.id}`, { as: t })).body;
    assert.equal(buyerAfter.itemListId, second);
    assert.ok(
      buyerAfter.updatedAt > buyerBefore.updatedAt,
      'a mirror polling buyers with updatedSince sees the new list',
    );

    const defaultAfter = (await getList(ctx(), t, defaultId)).body;
    assert.equal(defaultAfter.isDefault, true);
    // Only what the move changes: the partnership left, and updatedAt records it for mirrors.
    assert.deepEqual({ ...defaultAfter, updatedAt: 0 }, { ...defaultBefore, partnershipIds: [], updatedAt: 0 });
    assert.ok(defaultAfter.updatedAt > defaultBefore.updatedAt);
    assert.deepEqual(
      defaultAfter.entries.map((e: any) => [e.itemVariantId, e.overrideFlatPrice, e.currency]),
      [[variantIds[0], null, null]],
    );
    assert.deepEqual([defaultAfter.globalPriceFactor, defaultAfter.globalCostFactor], [1, 1]);
    const defaults = await ctx()
      .db.selectFrom('item_lists')
      .select('id')
      .where('business_id', '=', t.businessId)
      .where('is_default', '=', 1)
      .execute();
    assert.equal(defaults.length, 1);
  });

  it("takes thousands of entries in one list (beyond one statement's parameter limit)", async () => {
    const t = await ctx().createTenant();
    const variantIds: string[] = [];
    for (let i = 0; i < 45; i++)
      variantIds.push(
        ...(
          await createVariants(
            ctx(),
            t,
            Array.from({ length: 100 }, () => ({})),
          )
        ).variantIds,
      );
    const id = await createList(ctx(), t, {
      entries: variantIds.map((itemVariantId) => ({ itemVariantId, overrideFlatPrice: 1 })),
    });
    assert.equal((await getList(ctx(), t, id)).body.entries.length, 4500);
  });

  it('replays a repeated Idempotency-Key and creates exactly one list', async () => {
    const t = await ctx().createTenant();
    const request = {
      as: t,
      body: { itemListData: { label: 'Once' } },
      headers: { 'idempotency-key': 'pricing-once-1' },
    };
    const first = await ctx().request('POST', '/api/v1/pricing', request);
    const second = await ctx().request('POST', '/api/v1/pricing', request);
    assert.equal(first.status, 201);
    assert.deepEqual(second.body, first.body);
    assert.equal(second.status, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(await countLists(ctx(), t), 2);
  });
});

describeEachBackend('GET /api/v1/pricing/:id', (ctx) => {
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/pricing/${await createList(c, owner, {})}` });

  it('answers an unknown list with 404 "Price list not found"', async () => {
    const t = await ctx().createTenant();
    const res = await getList(ctx(), t, 'list_missing');
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'Price list not found');
  });

  it('hides entries of deleted variants', async () => {
    const t = await ctx().createTenant();
    const item = await createVariants(ctx(), t);
    const id = await createList(ctx(), t, { entries: [{ itemVariantId: item.variantIds[0] }] });
    await ctx().request('DELETE', `/api/v1/items/${item.id}`, { as: t });
    assert.deepEqual((await getList(ctx(), t, id)).body.entries, []);
  });
});

describeEachBackend('GET /api/v1/pricing', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/pricing', crossTenant: false });

  it('requires credentials', async () => {
    assertUnauthorized(await ctx().request('GET', '/api/v1/pricing'));
  });

  it("pages the business's lists newest first, the default list included, and filters by status and updatedSince", async () => {
    const t = await ctx().createTenant();
    await createList(ctx(), await ctx().createTenant(), {});
    const a = await createList(ctx(), t, { itemListData: { label: 'A', status: 'DRAFT' } });
    const b = await createList(ctx(), t, { itemListData: { label: 'B' } });
    const page = await ctx().request('GET', '/api/v1/pricing?limit=2', { as: t });
    assert.equal(page.status, 200);
    assert.equal(page.body.total, 3);
    assert.equal(page.body.pageSize, 2);
    assert.deepEqual(
      page.body.items.map((l: any) => l.id),
      [b, a],
    );
    const last = await ctx().request('GET', '/api/v1/pricing?limit=2&page=2', { as: t });
    assert.deepEqual(
      last.body.items.map((l: any) => l.isDefault),
      [true],
    );
    assert.deepEqual(
      (await ctx().request('GET', '/api/v1/pricing?status=DRAFT', { as: t })).body.items.map((l: any) => l.id),
      [a],
    );
    const updatedA = (await getList(ctx(), t, a)).body.updatedAt;
    const since = await ctx().request('GET', `/api/v1/pricing?updatedSince=${encodeURIComponent(updatedA)}`, { as: t });
    assert.ok(!since.body.items.some((l: any) => l.id === a));
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    assert.equal(doc.paths['/api/v1/pricing'].get['x-supplyline-extension'], true);
    assert.equal(doc.paths['/api/v1/pricing/{id}'].get['x-supplyline-extension'], true);
  });
});

describeEachBackend('findEffectiveEntries', (ctx) => {
  const now = new Date();
  const day = 86_400_000;
  /** The list a partnership is assigned now, as the order route reads it with the buyer. */
  const listOf = async (db: Db, partnershipId: string) =>
    (
      await db
        .selectFrom('partnerships')
        .select('item_list_id')
        .where('id', '=', partnershipId)
        .executeTakeFirstOrThrow()
    ).item_list_id;
  /** One variant's price terms for a partnership's buyer, as the batch gives them. */
  const findEffectiveEntry = async (db: Db, businessId: string, partnershipId: string, variantId: string, at: Date) => {
    const found = (await findEffectiveEntries(db, businessId, await listOf(db, partnershipId), [variantId], at)).get(
      variantId,
    );
    return found
      ? {
          entryId: found.entryId,
          price: found.price,
          cost: found.cost,
          currency: found.currency,
          unitOfMeasure: found.unitOfMeasure,
        }
      : null;
  };

  it('prices from the assigned list when it applies, else from the default list', async () => {
    const t = await ctx().createTenant();
    const {
      variantIds: [priced, unlisted, noCost],
    } = await createVariants(ctx(), t, [{ price: 20, cost: 8 }, { price: 3 }, { price: 5, cost: null }]);
    const partner = await createPartnership(ctx(), t);
    const defaultListId = (await ctx().request('GET', `/api/v1/buyers/${partner.id}`, { as: t })).body.itemListId;
    const find = (variantId: string) =>
      findEffectiveEntry(ctx().db, t.businessId, partner.partnershipId, variantId, now);

    const defaultPrice = await find(priced);
    assert.deepEqual(
      { ...defaultPrice, entryId: undefined },
      { entryId: undefined, price: '20', cost: '8', currency: 'AUD', unitOfMeasure: null },
    );
    assert.equal((await find(noCost))?.cost, '0');

    const listId = await createList(ctx(), t, {
      itemListData: { label: 'VIP', globalPriceFactor: 0.9, globalCostFactor: 1.5 },
      entries: [{ itemVariantId: priced }, { itemVariantId: noCost, overrideFlatPrice: 4.4, currency: 'NZD' }],
      partnerships: [partner.partnershipId],
    });
    const vipEntries = (await getList(ctx(), t, listId)).body.entries;
    const vip = await find(priced);
    assert.deepEqual(vip, {
      entryId: vipEntries.find((e: any) => e.itemVariantId === priced).id,
      price: '18',
      cost: '12',
      currency: 'AUD',
      unitOfMeasure: null,
    });
    assert.deepEqual(
      { ...(await find(noCost)), entryId: undefined },
      { entryId: undefined, price: '4.4', cost: '0', currency: 'NZD', unitOfMeasure: null },
    );
    assert.equal((await find(unlisted))?.price, '3', 'a variant the assigned list lacks comes from the default list');
    const defaultEntries = (await getList(ctx(), t, defaultListId)).body.entries;
    assert.equal((await find(unlisted))?.entryId, defaultEntries.find((e: any) => e.itemVariantId === unlisted).id);

    const all = await findEffectiveEntries(
      ctx().db,
      t.businessId,
      await listOf(ctx().db, partner.partnershipId),
      [priced, unlisted, noCost, priced, 'var_missing'],
      now,
    );
    assert.deepEqual(
      [...all.keys()].sort(),
      [priced, unlisted, noCost].sort(),
      'one answer per live variant, in one call',
    );
    for (const v of [priced, unlisted, noCost]) {
      const { itemId, variantName, sku, ...terms } = all.get(v)!;
      assert.deepEqual(terms, await find(v), 'a batch prices each variant as alone');
      assert.match(itemId, /^itm_/);
      assert.equal(typeof variantName, 'string');
      assert.ok(sku === null || typeof sku === 'string');
    }
  });

  it('ignores an assigned list that is not ACTIVE or not current', async () => {
    const t = await ctx().createTenant();
    const {
      variantIds: [v],
    } = await createVariants(ctx(), t, [{ price: 10 }]);
    const variants = [
      { status: 'INACTIVE' },
      { startDate: new Date(now.getTime() + day).toISOString() },
      { endDate: new Date(now.getTime() - day).toISOString() },
    ];
    for (const data of variants) {
      const partner = await createPartnership(ctx(), t);
      await createList(ctx(), t, {
        itemListData: { label: 'Off', ...data },
        entries: [{ itemVariantId: v, overrideFlatPrice: 1 }],
        partnerships: [partner.partnershipId],
      });
      assert.equal(
        (await findEffectiveEntry(ctx().db, t.businessId, partner.partnershipId, v, now))?.price,
        '10',
        JSON.stringify(data),
      );
    }
  });

  it("has no price for another business's variant, and never applies another business's list", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const {
      variantIds: [mine],
    } = await createVariants(ctx(), t, [{ price: 20 }]);
    const {
      variantIds: [theirs],
    } = await createVariants(ctx(), other);
    const partner = await createPartnership(ctx(), t);
    assert.equal(await findEffectiveEntry(ctx().db, t.businessId, partner.partnershipId, theirs, now), null);
    const foreign = await createPartnership(ctx(), other);
    const theirList = await createList(ctx(), other, {
      itemListData: { label: 'Theirs' },
      entries: [{ itemVariantId: theirs, overrideFlatPrice: 1 }],
      partnerships: [foreign.partnershipId],
    });
    const found = await findEffectiveEntries(ctx().db, t.businessId, theirList, [mine, theirs], now);
    assert.equal(found.get(mine)?.price, '20', 'their list is ignored: my default list prices my variant');
    assert.equal(found.has(theirs), false);
  });
});
