import assert from 'node:assert/strict';
import { it } from 'node:test';
import { findBuyerPartnership, findBuyerPartnerships } from '../../src/buyers/repository.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { assertUnauthorized, securityCases } from '../helpers/security.ts';

async function createBuyer(ctx: TestContext, as: Tenant, body: Record<string, unknown> = {}) {
  const response = await ctx.request('POST', '/api/v1/buyers', {
    as,
    body: { buyer: { name: 'Acme Foods' }, ...body },
  });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body as { id: string; phantomId: string; partnershipId: string };
}

const getBuyer = (ctx: TestContext, as: Tenant, id: string) => ctx.request('GET', `/api/v1/buyers/${id}`, { as });

async function countPhantoms(ctx: TestContext, t: Tenant): Promise<number> {
  const row = await ctx.db
    .selectFrom('phantoms')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', t.businessId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The three credential cases, for POST routes whose "another tenant" case is a foreign reference (tested apart). */
function credentialCases(ctx: () => TestContext, method: string, url: string, body: unknown) {
  it(`${method} ${url}: missing, wrong and revoked credentials give 401`, async () => {
    const owner = await ctx().createTenant();
    assertUnauthorized(await ctx().request(method, url, { body }));
    assertUnauthorized(
      await ctx().request(method, url, {
        body,
        headers: { 'x-business-id': owner.businessId, 'x-api-key': '0'.repeat(32) },
      }),
    );
    const spare = await ctx().addKey(owner);
    await ctx().revokeKey(owner, spare.keyId);
    assertUnauthorized(await ctx().request(method, url, { as: spare, body }));
    assert.equal(await countPhantoms(ctx(), owner), 0);
  });
}

describeEachBackend('POST /api/v1/buyers', (ctx) => {
  securityCases(ctx, {
    method: 'POST',
    url: () => '/api/v1/buyers',
    body: { buyer: { name: 'Intruder' } },
    crossTenant: false,
  });

  credentialCases(ctx, 'POST', '/api/v1/buyers', { buyer: { name: 'Acme' } });

  it('creates phantom, phantom buyer and partnership on the default list', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/buyers', {
      as: t,
      body: { buyer: { name: 'Acme Foods', legalName: 'Acme Foods Pty Ltd' } },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'partnershipId', 'phantomId', 'success']);
    assert.equal(res.body.success, true);
    assert.equal(res.body.id, res.body.phantomId);
    assert.match(res.body.phantomId, /^phm_/);
    assert.match(res.body.partnershipId, /^prt_/);

    const db = ctx().db;
    const phantomBuyer = await db
      .selectFrom('phantom_buyers')
      .selectAll()
      .where('id', '=', res.body.phantomId)
      .executeTakeFirst();
    assert.equal(phantomBuyer?.business_id, t.businessId);
    const partnership = await db
      .selectFrom('partnerships')
      .selectAll()
      .where('id', '=', res.body.partnershipId)
      .executeTakeFirstOrThrow();
    const defaultList = await db
      .selectFrom('item_lists')
      .select('id')
      .where('business_id', '=', t.businessId)
      .where('is_default', '=', 1)
      .executeTakeFirstOrThrow();
    assert.equal(partnership.business_id, t.businessId);
    assert.equal(partnership.phantom_id, res.body.phantomId);
    assert.equal(partnership.status, 'ACTIVE');
    assert.equal(partnership.item_list_id, defaultList.id);
  });

  it('returns the minimal buyer in the full reference shape', async () => {
    const t = await ctx().createTenant();
    const { id, partnershipId } = await createBuyer(ctx(), t);
    const got = await getBuyer(ctx(), t, id);
    assert.equal(got.status, 200);
    assert.deepEqual(Object.keys(got.body).sort(), [
      'buyerInfo',
      'createdAt',
      'deletedAt',
      'emails',
      'id',
      'itemListId',
      'legalName',
      'locations',
      'name',
      'partnershipId',
      'partnershipStatus',
      'phones',
      'primaryEmail',
      'primaryPhone',
      'properties',
      'status',
      'updatedAt',
    ]);
    assert.equal(got.body.id, id);
    assert.equal(got.body.partnershipId, partnershipId);
    assert.equal(got.body.status, 'ACTIVE');
    assert.equal(got.body.partnershipStatus, 'ACTIVE');
    assert.match(got.body.itemListId, /^list_/);
    assert.equal(got.body.legalName, null);
    assert.equal(got.body.deletedAt, null);
    assert.equal(got.body.createdAt, got.body.updatedAt);
    assert.match(got.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual([got.body.emails, got.body.phones, got.body.locations], [[], [], []]);
  });

  it('stores partnershipStatus, buyerInfo, properties and contacts in order', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t, {
      buyer: { name: 'Acme', buyerInfo: { notes: 'Back door' }, properties: { erp: { code: 'A1' } } },
      partnershipStatus: 'PENDING',
      emails: [{ email: 'orders@acme.example', contactName: 'Jo' }, { email: 'ap@acme.example' }],
      phones: [{ phone: '+61 2 9876 5432' }],
      locations: [
        {
          label: 'Main',
          type: 'WAREHOUSE',
          addressLine1: '1 Dock Rd',
          city: 'Sydney',
          state: 'NSW',
          postcode: '2000',
          country: 'AU',
        },
      ],
    });
    const { body } = await getBuyer(ctx(), t, id);
    assert.equal(body.partnershipStatus, 'PENDING');
    assert.deepEqual(body.buyerInfo, { notes: 'Back door' });
    assert.deepEqual(body.properties, { erp: { code: 'A1' } });
    assert.deepEqual(
      body.emails.map((e: any) => [e.email, e.contactName, e.sequence, e.isPrimary, e.isVerified, e.verifiedAt]),
      [
        ['orders@acme.example', 'Jo', 1, false, false, null],
        ['ap@acme.example', null, 2, false, false, null],
      ],
    );
    assert.match(body.emails[0].id, /^eml_/);
    assert.match(body.phones[0].id, /^phn_/);
    assert.equal(body.phones[0].isVerified, false);
    const [loc] = body.locations;
    assert.match(loc.id, /^loc_/);
    assert.deepEqual(
      { ...loc, id: undefined },
      {
        id: undefined,
        label: 'Main',
        type: 'WAREHOUSE',
        status: 'ACTIVE',
        addressLine1: '1 Dock Rd',
        addressLine2: null,
        city: 'Sydney',
        state: 'NSW',
        postcode: '2000',
        country: 'AU',
        sequence: 1,
      },
    );
  });

  it('rejects bad input by path: enum, email, country, unknown keys, missing name', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/buyers', {
      as: t,
      body: {
        buyer: { legalName: 'X', colour: 'red' },
        partnershipStatus: 'GONE',
        emails: [{ email: 'not-an-email' }],
        locations: [{ addressLine1: '1 St', country: 'Australia' }, { city: 'X' }],
      },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
    const f = res.body.fieldErrors;
    assert.equal(f['buyer.name'], 'Required');
    assert.equal(f['buyer.colour'], 'Unrecognized key');
    assert.equal(
      f.partnershipStatus,
      "Invalid enum value. Expected 'DECLINED' | 'PENDING' | 'REVIEW' | 'ACTIVE' | 'PAUSED' | 'SUSPENDED' | 'EXPIRED' | 'TERMINATED', received 'GONE'",
    );
    assert.equal(f['emails.0.email'], 'Invalid email');
    assert.ok(f['locations.0.country']);
    assert.equal(f['locations.1.addressLine1'], 'Required');
    assert.equal(await countPhantoms(ctx(), t), 0);
  });

  it('keeps primaryEmail and primaryPhone equal to the contact marked primary', async () => {
    const t = await ctx().createTenant();
    const marked = await createBuyer(ctx(), t, {
      emails: [{ email: 'a@acme.example' }, { email: 'b@acme.example', isPrimary: true }],
      phones: [{ phone: '0400 000 001', isPrimary: true }],
    });
    let { body } = await getBuyer(ctx(), t, marked.id);
    assert.equal(body.primaryEmail, 'b@acme.example');
    assert.deepEqual(
      body.emails.map((e: any) => e.isPrimary),
      [false, true],
    );
    assert.equal(body.primaryPhone, '0400 000 001');

    const named = await createBuyer(ctx(), t, {
      buyer: { name: 'N', primaryEmail: 'b@acme.example' },
      emails: [{ email: 'a@acme.example' }, { email: 'b@acme.example' }],
    });
    ({ body } = await getBuyer(ctx(), t, named.id));
    assert.deepEqual(
      body.emails.map((e: any) => e.isPrimary),
      [false, true],
    );

    // A primary value with no matching contact becomes a primary contact, so the two never disagree.
    const added = await createBuyer(ctx(), t, {
      buyer: { name: 'N', primaryEmail: 'x@acme.example', primaryPhone: '0400 111 222' },
    });
    ({ body } = await getBuyer(ctx(), t, added.id));
    assert.deepEqual(
      body.emails.map((e: any) => [e.email, e.isPrimary]),
      [['x@acme.example', true]],
    );
    assert.deepEqual(
      body.phones.map((p: any) => [p.phone, p.isPrimary]),
      [['0400 111 222', true]],
    );
  });

  it('rejects two primary contacts, or a primary field that contradicts them, writing nothing', async () => {
    const t = await ctx().createTenant();
    const two = await ctx().request('POST', '/api/v1/buyers', {
      as: t,
      body: {
        buyer: { name: 'A' },
        emails: [
          { email: 'a@x.example', isPrimary: true },
          { email: 'b@x.example', isPrimary: true },
        ],
      },
    });
    assert.equal(two.status, 400);
    assert.deepEqual(two.body.fieldErrors, { 'emails.1.isPrimary': 'At most one contact can be primary' });
    const contradicting = await ctx().request('POST', '/api/v1/buyers', {
      as: t,
      body: {
        buyer: { name: 'A', primaryPhone: '0400 000 009' },
        phones: [{ phone: '0400 000 001', isPrimary: true }],
      },
    });
    assert.equal(contradicting.status, 400);
    assert.ok(contradicting.body.fieldErrors['buyer.primaryPhone']);
    assert.equal(await countPhantoms(ctx(), t), 0);
    const partnerships = await ctx()
      .db.selectFrom('partnerships')
      .select('id')
      .where('business_id', '=', t.businessId)
      .execute();
    assert.equal(partnerships.length, 0);
  });

  it('replays a repeated Idempotency-Key and creates exactly one buyer', async () => {
    const t = await ctx().createTenant();
    const request = {
      as: t,
      body: { buyer: { name: 'Once' }, emails: [{ email: 'once@x.example' }] },
      headers: { 'idempotency-key': 'buyer-once-1' },
    };
    const first = await ctx().request('POST', '/api/v1/buyers', request);
    const second = await ctx().request('POST', '/api/v1/buyers', request);
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(await countPhantoms(ctx(), t), 1);
    const emails = await ctx()
      .db.selectFrom('phantom_emails')
      .select('id')
      .where('business_id', '=', t.businessId)
      .execute();
    assert.equal(emails.length, 1);
  });
});

describeEachBackend('GET /api/v1/buyers/:id', (ctx) => {
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/buyers/${(await createBuyer(c, owner)).id}` });

  it('answers an unknown or foreign buyer with 404 "Buyer not found"', async () => {
    const owner = await ctx().createTenant();
    const other = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), owner);
    for (const [as, url] of [
      [owner, '/api/v1/buyers/phm_missing'],
      [other, `/api/v1/buyers/${id}`],
    ] as const) {
      const res = await ctx().request('GET', url, { as });
      assert.equal(res.status, 404);
      assert.equal(res.body.message, 'Buyer not found');
    }
  });

  it('answers a soft-deleted buyer with 404', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t);
    await ctx().db.updateTable('phantoms').set({ deleted_at: new Date().toISOString() }).where('id', '=', id).execute();
    assert.equal((await getBuyer(ctx(), t, id)).status, 404);
  });

  it('reads the partnerships of many buyers in one query as of one: none for a deleted, foreign or unknown buyer', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const [live, deleted, ended, foreign] = [
      await createBuyer(ctx(), t),
      await createBuyer(ctx(), t),
      await createBuyer(ctx(), t),
      await createBuyer(ctx(), other),
    ];
    const now = new Date().toISOString();
    await ctx().db.updateTable('phantoms').set({ deleted_at: now }).where('id', '=', deleted.id).execute();
    await ctx().db.updateTable('partnerships').set({ deleted_at: now }).where('id', '=', ended.partnershipId).execute();
    const ids = [live.id, deleted.id, ended.id, foreign.id, 'phm_missing', live.id];
    const many = await findBuyerPartnerships(ctx().db, t.businessId, ids);
    assert.deepEqual(
      [...many],
      [
        [live.id, { id: live.partnershipId, itemListId: many.get(live.id)?.itemListId }],
        [deleted.id, undefined],
        [ended.id, undefined],
        [foreign.id, undefined],
        ['phm_missing', undefined],
      ],
    );
    assert.ok(many.get(live.id)?.itemListId === null || typeof many.get(live.id)?.itemListId === 'string');
    for (const id of ids) assert.deepEqual(many.get(id), await findBuyerPartnership(ctx().db, t.businessId, id));
    assert.equal((await findBuyerPartnerships(ctx().db, t.businessId, [])).size, 0);
  });
});

const patch = (ctx: TestContext, as: Tenant, id: string, body: unknown, headers?: Record<string, string>) =>
  ctx.request('PATCH', `/api/v1/buyers/${id}`, { as, body, headers });

describeEachBackend('PATCH /api/v1/buyers/:id', (ctx) => {
  securityCases(ctx, {
    method: 'PATCH',
    body: { buyer: { name: 'Taken over' } },
    url: async (c, owner) => `/api/v1/buyers/${(await createBuyer(c, owner)).id}`,
  });

  it('updates core fields, deep-merges buyerInfo and properties, and returns the full buyer', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t, {
      buyer: {
        name: 'Old',
        legalName: 'Old Pty',
        buyerInfo: { notes: 'n', hours: { mon: '9-5' } },
        properties: { unleashed: { guid: '123' } },
      },
    });
    const before = (await getBuyer(ctx(), t, id)).body;
    await new Promise((r) => setTimeout(r, 5));
    const res = await patch(ctx(), t, id, {
      buyer: {
        name: 'New',
        legalName: null,
        buyerInfo: { hours: { tue: '9-5' } },
        properties: { sage200Evo: { salesOrderNo: 456 } },
      },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'New');
    assert.equal(res.body.legalName, null);
    assert.deepEqual(res.body.buyerInfo, { notes: 'n', hours: { mon: '9-5', tue: '9-5' } });
    assert.deepEqual(res.body.properties, { unleashed: { guid: '123' }, sage200Evo: { salesOrderNo: 456 } });
    assert.ok(res.body.updatedAt > before.updatedAt);
    assert.equal(res.body.createdAt, before.createdAt);
    assert.deepEqual((await getBuyer(ctx(), t, id)).body, res.body);
  });

  it('changes the partnership status', async () => {
    const t = await ctx().createTenant();
    const { id, partnershipId } = await createBuyer(ctx(), t);
    const res = await patch(ctx(), t, id, { partnershipStatus: 'SUSPENDED' });
    assert.equal(res.body.partnershipStatus, 'SUSPENDED');
    const row = await ctx()
      .db.selectFrom('partnerships')
      .select('status')
      .where('id', '=', partnershipId)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'SUSPENDED');
  });

  it('creates, updates and deletes contacts of all three kinds in one request', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t, {
      emails: [{ email: 'a@x.example' }, { email: 'b@x.example' }],
      phones: [{ phone: '0400 000 001' }],
      locations: [{ addressLine1: '1 First St' }],
    });
    const { body: b } = await getBuyer(ctx(), t, id);
    const res = await patch(ctx(), t, id, {
      createEmails: [{ email: 'c@x.example', contactName: 'Cy' }],
      updateEmails: [{ id: b.emails[1].id, contactName: 'Bea' }],
      deleteEmails: [b.emails[0].id],
      createPhones: [{ phone: '0400 000 002' }],
      deletePhones: [b.phones[0].id],
      createLocations: [{ addressLine1: '2 Second St', country: 'NZ' }],
      updateLocations: [{ id: b.locations[0].id, city: 'Perth', label: 'HQ' }],
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.emails.map((e: any) => [e.email, e.contactName, e.sequence]),
      [
        ['b@x.example', 'Bea', 2],
        ['c@x.example', 'Cy', 3],
      ],
    );
    // Sequences continue after the highest remaining contact, so a deleted last position is reused.
    assert.deepEqual(
      res.body.phones.map((p: any) => [p.phone, p.sequence]),
      [['0400 000 002', 1]],
    );
    assert.deepEqual(
      res.body.locations.map((l: any) => [l.addressLine1, l.city, l.label, l.country]),
      [
        ['1 First St', 'Perth', 'HQ', null],
        ['2 Second St', null, null, 'NZ'],
      ],
    );
  });

  it('answers unknown contact ids with 404 listing them, and changes nothing', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t, { emails: [{ email: 'a@x.example' }] });
    const otherBuyer = await createBuyer(ctx(), t, { emails: [{ email: 'z@x.example' }] });
    const foreignEmail = (await getBuyer(ctx(), t, otherBuyer.id)).body.emails[0].id;
    const res = await patch(ctx(), t, id, {
      buyer: { name: 'Changed' },
      updateEmails: [{ id: 'eml_a', contactName: 'x' }],
      deleteEmails: [foreignEmail],
    });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, `Buyer email(s) not found: eml_a, ${foreignEmail}`);
    const phones = await patch(ctx(), t, id, { deletePhones: ['phn_x'] });
    assert.equal(phones.body.message, 'Buyer phone(s) not found: phn_x');
    const locations = await patch(ctx(), t, id, { updateLocations: [{ id: 'loc_y', city: 'X' }] });
    assert.equal(locations.body.message, 'Buyer location(s) not found: loc_y');
    assert.equal((await getBuyer(ctx(), t, id)).body.name, 'Acme Foods');
    assert.equal((await getBuyer(ctx(), t, otherBuyer.id)).body.emails.length, 1);
  });

  it('rejects an empty update with 400 "No valid fields provided for update"', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t);
    for (const body of [{}, { buyer: {} }]) {
      const res = await patch(ctx(), t, id, body);
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'No valid fields provided for update');
    }
    const unknown = await patch(ctx(), t, id, { buyer: { colour: 'red' } });
    assert.equal(unknown.body.fieldErrors['buyer.colour'], 'Unrecognized key');
  });

  it('answers an unknown or foreign buyer with 404 "Buyer not found"', async () => {
    const t = await ctx().createTenant();
    const res = await patch(ctx(), t, 'phm_missing', { buyer: { name: 'X' } });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'Buyer not found');
  });

  it("moves the primary contact and keeps the buyer's primary fields in step", async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t, {
      emails: [{ email: 'a@x.example', isPrimary: true }, { email: 'b@x.example' }],
      phones: [{ phone: '0400 000 001', isPrimary: true }],
    });
    const { body: b } = await getBuyer(ctx(), t, id);
    let res = await patch(ctx(), t, id, { updateEmails: [{ id: b.emails[1].id, isPrimary: true }] });
    assert.equal(res.body.primaryEmail, 'b@x.example');
    assert.deepEqual(
      res.body.emails.map((e: any) => e.isPrimary),
      [false, true],
    );

    res = await patch(ctx(), t, id, { buyer: { primaryEmail: 'A@x.example' } });
    assert.equal(res.body.primaryEmail, 'a@x.example');
    assert.deepEqual(
      res.body.emails.map((e: any) => e.isPrimary),
      [true, false],
    );

    res = await patch(ctx(), t, id, { updateEmails: [{ id: b.emails[0].id, email: 'a2@x.example' }] });
    assert.equal(res.body.primaryEmail, 'a2@x.example');

    res = await patch(ctx(), t, id, { deletePhones: [b.phones[0].id] });
    assert.equal(res.body.primaryPhone, null);

    res = await patch(ctx(), t, id, { buyer: { primaryEmail: null } });
    assert.equal(res.body.primaryEmail, null);
    assert.ok(res.body.emails.every((e: any) => !e.isPrimary));

    const two = await patch(ctx(), t, id, {
      createEmails: [{ email: 'c@x.example', isPrimary: true }],
      updateEmails: [{ id: b.emails[1].id, isPrimary: true }],
    });
    assert.equal(two.status, 400);
    assert.deepEqual(two.body.fieldErrors, { 'updateEmails.0.isPrimary': 'At most one contact can be primary' });
  });

  it('replays a repeated Idempotency-Key', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t);
    const first = await patch(
      ctx(),
      t,
      id,
      { createEmails: [{ email: 'k@x.example' }] },
      { 'idempotency-key': 'patch-buyer-1' },
    );
    const second = await patch(
      ctx(),
      t,
      id,
      { createEmails: [{ email: 'k@x.example' }] },
      { 'idempotency-key': 'patch-buyer-1' },
    );
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal((await getBuyer(ctx(), t, id)).body.emails.length, 1);
  });
});

describeEachBackend('GET /api/v1/buyers', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/buyers', crossTenant: false });

  const list = (as: Tenant, query = '') => ctx().request('GET', `/api/v1/buyers${query}`, { as });

  it('requires credentials', async () => {
    assertUnauthorized(await ctx().request('GET', '/api/v1/buyers'));
  });

  it("pages newest first with the standard envelope and each buyer's own contacts", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    await createBuyer(ctx(), other);
    const ids: string[] = [];
    for (const n of [1, 2, 3])
      ids.push((await createBuyer(ctx(), t, { buyer: { name: `B${n}` }, emails: [{ email: `b${n}@x.example` }] })).id);
    const page1 = await list(t, '?limit=2');
    assert.equal(page1.status, 200);
    assert.deepEqual(Object.keys(page1.body).sort(), ['items', 'nextCursor', 'page', 'pageSize', 'total']);
    assert.equal(page1.body.total, 3);
    assert.equal(page1.body.pageSize, 2);
    assert.deepEqual(
      page1.body.items.map((b: any) => b.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual(
      page1.body.items.map((b: any) => b.emails.map((e: any) => e.email)),
      [['b3@x.example'], ['b2@x.example']],
    );
    const page2 = await list(t, '?limit=2&page=2');
    assert.deepEqual(
      page2.body.items.map((b: any) => b.id),
      [ids[0]],
    );
    assert.equal((await list(t, '?limit=101')).status, 400);
  });

  it('filters by updatedSince (strictly after), partnershipStatus and properties', async () => {
    const t = await ctx().createTenant();
    const a = await createBuyer(ctx(), t, { buyer: { name: 'A', properties: { erp: { id: 456 } } } });
    const b = await createBuyer(ctx(), t, { partnershipStatus: 'PAUSED' });
    const updatedB = (await getBuyer(ctx(), t, b.id)).body.updatedAt;
    const since = await list(t, `?updatedSince=${encodeURIComponent(updatedB)}`);
    assert.deepEqual(since.body.items, []);
    await new Promise((r) => setTimeout(r, 5));
    await patch(ctx(), t, a.id, { buyer: { legalName: 'A Ltd' } });
    assert.deepEqual(
      (await list(t, `?updatedSince=${encodeURIComponent(updatedB)}`)).body.items.map((x: any) => x.id),
      [a.id],
    );
    assert.deepEqual(
      (await list(t, '?partnershipStatus=PAUSED')).body.items.map((x: any) => x.id),
      [b.id],
    );
    assert.deepEqual(
      (await list(t, '?propertyPath=erp.id&propertyValue=456')).body.items.map((x: any) => x.id),
      [a.id],
    );
    assert.deepEqual(
      (await list(t, '?propertyPath=erp.id&propertyExists=false')).body.items.map((x: any) => x.id),
      [b.id],
    );
    assert.equal((await list(t, '?propertyValue=1')).status, 400);
  });

  it('leaves deleted buyers out unless includeDeleted=true', async () => {
    const t = await ctx().createTenant();
    const { id } = await createBuyer(ctx(), t);
    await ctx().db.updateTable('phantoms').set({ deleted_at: new Date().toISOString() }).where('id', '=', id).execute();
    assert.equal((await list(t)).body.total, 0);
    const all = await list(t, '?includeDeleted=true');
    assert.deepEqual(
      all.body.items.map((x: any) => x.id),
      [id],
    );
    assert.notEqual(all.body.items[0].deletedAt, null);
  });

  it('is marked as an extension in the OpenAPI document', async () => {
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    assert.equal(doc.paths['/api/v1/buyers'].get['x-supplyline-extension'], true);
    assert.equal(doc.paths['/api/v1/buyers'].post['x-supplyline-extension'], undefined);
    assert.equal(doc.paths['/api/v1/buyers/{id}'].patch.operationId, 'updateBuyer');
  });
});
