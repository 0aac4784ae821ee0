import assert from 'node:assert/strict';
import { PLUS_AS_SPACE_HINT, DATE_TIME_HINT } from '../../src/http/error-handler.ts';
import { it } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { createItems } from '../../src/items/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';

const variant = (over: Record<string, unknown> = {}) => ({ currency: 'AUD', price: 12.5, ...over });

export async function createItem(ctx: TestContext, as: Tenant, body: Record<string, unknown> = {}) {
  const response = await ctx.request('POST', '/api/v1/items', {
    as,
    body: { item: { name: 'Blue Widget' }, variants: [variant()], ...body },
  });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body as { id: string; variantIds: string[] };
}

describeEachBackend('POST /api/v1/items', (ctx) => {
  it('creates item, ownership record and variants in order, with default-list entries', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: {
        item: { name: 'Blue Widget', type: 'OTHER', status: 'ACTIVE' },
        variants: [variant({ variantName: 'Small', cost: 4 }), variant({ variantName: 'Large', price: 0.1 })],
      },
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.success, true);
    assert.match(res.body.id, /^itm_/);
    assert.equal(res.body.variantIds.length, 2);
    assert.ok(res.body.variantIds.every((id: string) => id.startsWith('var_')));

    const platform = await ctx()
      .db.selectFrom('platform_items')
      .selectAll()
      .where('id', '=', res.body.id)
      .executeTakeFirst();
    assert.equal(platform?.business_id, t.businessId);
    const entries = await ctx()
      .db.selectFrom('item_list_entries')
      .innerJoin('item_lists', 'item_lists.id', 'item_list_entries.item_list_id')
      .select(['item_variant_id', 'override_flat_price', 'is_default'])
      .where('item_list_entries.business_id', '=', t.businessId)
      .execute();
    assert.deepEqual(entries.map((e) => e.item_variant_id).sort(), [...res.body.variantIds].sort());
    assert.ok(entries.every((e) => Boolean(e.is_default) && e.override_flat_price === null));

    const got = await ctx().request('GET', `/api/v1/items/${res.body.id}`, { as: t });
    assert.equal(got.status, 200);
    assert.deepEqual(
      got.body.variants.map((v: any) => [v.id, v.variantName, v.sequence, v.price]),
      [
        [res.body.variantIds[0], 'Small', 1, 12.5],
        [res.body.variantIds[1], 'Large', 2, 0.1],
      ],
    );
    assert.equal(got.body.variants[0].cost, 4);
    assert.equal(got.body.handle, 'blue-widget');
    assert.match(got.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('applies defaults: type OTHER, status ACTIVE, variant name Default', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    const got = await ctx().request('GET', `/api/v1/items/${id}`, { as: t });
    assert.equal(got.body.type, 'OTHER');
    assert.equal(got.body.status, 'ACTIVE');
    assert.equal(got.body.variants[0].variantName, 'Default');
  });

  it('refuses two variants of one item with one name, unnamed ones (Default) included, and names each repeat', async () => {
    const t = await ctx().createTenant();
    const twoDefaults = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Two' }, variants: [variant({ price: 1 }), variant({ price: 2 })] },
    });
    assert.equal(twoDefaults.status, 400, JSON.stringify(twoDefaults.body));
    assert.deepEqual(twoDefaults.body.fieldErrors, {
      'variants.1.variantName': "Another variant of this item is named 'Default': give each variant a name of its own",
    });
    const named = await createItem(ctx(), t, {
      item: { name: 'Named' },
      variants: [variant({ variantName: 'A' }), variant({ variantName: 'B' })],
    });
    const patch = (body: Record<string, unknown>) =>
      ctx().request('PATCH', `/api/v1/items/${named.id}`, { as: t, body });
    const added = await patch({ createVariants: [variant({ variantName: 'A' })] });
    assert.equal(added.status, 400);
    assert.deepEqual(Object.keys(added.body.fieldErrors), ['createVariants.0.variantName']);
    const renamed = await patch({ updateVariants: [{ id: named.variantIds[1], variantName: 'A' }] });
    assert.equal(renamed.status, 400);
    assert.deepEqual(Object.keys(renamed.body.fieldErrors), ['updateVariants.0.variantName']);
    // Swapped, or a name freed by a delete in the same call: allowed.
    const swapped = await patch({
      updateVariants: [
        { id: named.variantIds[0], variantName: 'B' },
        { id: named.variantIds[1], variantName: 'A' },
      ],
    });
    assert.equal(swapped.status, 200, JSON.stringify(swapped.body));
    const freed = await patch({
      deleteVariants: [named.variantIds[0]],
      createVariants: [variant({ variantName: 'B' })],
    });
    assert.equal(freed.status, 200, JSON.stringify(freed.body));
    // Names already repeated (stored before this rule) refuse nothing a PATCH does not change.
    const twins = await createItem(ctx(), t, {
      item: { name: 'Twins' },
      variants: [variant({ variantName: 'X' }), variant({ variantName: 'Y' })],
    });
    await ctx()
      .db.updateTable('item_variants')
      .set({ variant_name: 'Default' })
      .where('item_id', '=', twins.id)
      .execute();
    const resent = await ctx().request('PATCH', `/api/v1/items/${twins.id}`, {
      as: t,
      body: { updateVariants: [{ id: twins.variantIds[0], variantName: 'Default', price: 3 }] },
    });
    assert.equal(resent.status, 200, JSON.stringify(resent.body));
  });

  it('requires at least one variant', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/items', { as: t, body: { item: { name: 'X' }, variants: [] } });
    assert.equal(res.status, 400);
    assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
    assert.ok(res.body.fieldErrors.variants);
  });

  it('reports each invalid field by path, enums with the expected values', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { status: 'GONE', colour: 'blue' }, variants: [variant({ currency: 'XXX', price: -1 })] },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.fieldErrors['item.name'], 'Required');
    assert.equal(res.body.fieldErrors['item.colour'], 'Unrecognized key');
    assert.equal(
      res.body.fieldErrors['item.status'],
      "Invalid enum value. Expected 'ACTIVE' | 'DRAFT' | 'ARCHIVED', received 'GONE'",
    );
    assert.match(
      res.body.fieldErrors['variants.0.currency'],
      /^Invalid enum value\. Expected 'USD' \| .*received 'XXX'$/,
    );
    assert.ok(res.body.fieldErrors['variants.0.price']);
  });

  it('derives unique handles from names, and rejects a taken explicit handle with 409', async () => {
    const t = await ctx().createTenant();
    const a = await createItem(ctx(), t, { item: { name: 'Café Crème!' } });
    const b = await createItem(ctx(), t, { item: { name: 'Café Crème!' } });
    const handles = await Promise.all(
      [a, b].map(async (x) => (await ctx().request('GET', `/api/v1/items/${x.id}`, { as: t })).body.handle),
    );
    assert.deepEqual(handles, ['cafe-creme', 'cafe-creme-2']);
    const dup = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Other', handle: 'cafe-creme' }, variants: [variant()] },
    });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.errorCode, 'CONFLICT');
    // Handles are per business, and free again once the item is deleted.
    const other = await ctx().createTenant();
    await createItem(ctx(), other, { item: { name: 'X', handle: 'cafe-creme' } });
    await ctx().request('DELETE', `/api/v1/items/${a.id}`, { as: t });
    await createItem(ctx(), t, { item: { name: 'X', handle: 'cafe-creme' } });
  });

  it('derives the next free handle past taken neighbours, whatever else shares the prefix', async () => {
    const t = await ctx().createTenant();
    const handleOf = async (body: Record<string, unknown>) => {
      const created = await createItem(ctx(), t, body);
      return (await ctx().request('GET', `/api/v1/items/${created.id}`, { as: t })).body.handle;
    };
    for (const handle of ['widget-3', 'widget-x', 'widgets', 'widget-2b', 'Widget-2'])
      await handleOf({ item: { name: 'Taken', handle } });
    assert.equal(await handleOf({ item: { name: 'Widget' } }), 'widget');
    // "Widget-2" differs by case, so "widget-2" is free; "widget-3" is taken.
    assert.equal(await handleOf({ item: { name: 'Widget' } }), 'widget-2');
    assert.equal(await handleOf({ item: { name: 'Widget' } }), 'widget-4');
  });

  it('derives handles for items created together (an import) past handles taken in the database and in the group', async () => {
    const t = await ctx().createTenant();
    // "gadget" itself is free (deleted), "gadget-2" is taken: the second Gadget of the group skips it.
    const gone = await createItem(ctx(), t, { item: { name: 'Gadget' } });
    await createItem(ctx(), t, { item: { name: 'Taken', handle: 'gadget-2' } });
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${gone.id}`, { as: t })).status, 204);
    const input = (item: Record<string, unknown>) => ({ item, variants: [variant()] });
    const created = await createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createItems(c, [
        input({ name: 'Gadget' }),
        input({ name: 'Gadget' }),
        input({ name: 'Named', handle: 'sprocket' }),
        input({ name: 'Sprocket' }),
        input({ name: 'Gizmo' }),
      ] as never),
    );
    assert.deepEqual(
      created.map((r) => ('resource' in r ? r.resource.handle : r.message)),
      ['gadget', 'gadget-3', 'sprocket', 'sprocket-2', 'gizmo'],
    );
  });

  it('derives handles past a run of taken neighbours longer than one lookup, and takes a freed one first', async () => {
    const t = await ctx().createTenant();
    const input = (item: Record<string, unknown>) => ({ item, variants: [variant()] });
    const create = (items: Record<string, unknown>[]) =>
      createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
        createItems(c, items.map(input) as never),
      );
    const handles = (created: Awaited<ReturnType<typeof create>>) =>
      created.map((r) => ('resource' in r ? r.resource.handle : r.message));
    // bolt, bolt-2 … bolt-40: past the first two windows of neighbours looked up.
    await create(Array.from({ length: 40 }, () => ({ name: 'Bolt' })));
    assert.deepEqual(handles(await create([{ name: 'Bolt' }, { name: 'Bolt' }])), ['bolt-41', 'bolt-42']);
    const nine = (await ctx().request('GET', '/api/v1/items?limit=100', { as: t })).body.items.find(
      (i: { handle: string }) => i.handle === 'bolt-9',
    );
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${nine.id}`, { as: t })).status, 204);
    // A later input's own handle that an earlier one was given is that input's 409.
    assert.deepEqual(handles(await create([{ name: 'Bolt' }, { name: 'Bolt' }, { name: 'Nut', handle: 'bolt-43' }])), [
      'bolt-9',
      'bolt-43',
      "An item with handle 'bolt-43' already exists",
    ]);
  });

  it("looks a taken handle's neighbours up by the handle index, not by reading every item of the business", async () => {
    const t = await ctx().createTenant();
    const db = ctx().db;
    // A business of 1,000 items, with statistics: PostgreSQL plans by them (a few rows it reads whole).
    await createWriteRunner(db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createItems(
        c,
        Array.from({ length: 1000 }, (_, i) => ({ item: { name: `Filler ${i}` }, variants: [variant()] })) as never,
      ),
    );
    if (ctx().backend === 'postgres') await sql`analyze items`.execute(db);
    await createItem(ctx(), t, { item: { name: 'Gizmo' } });
    const queries: CompiledQuery[] = [];
    const capturing = db.withPlugin({
      transformQuery: ({ node, queryId }) => {
        queries.push(db.getExecutor().compileQuery(node, queryId));
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const created = await createWriteRunner(capturing).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createItems(c, [{ item: { name: 'Gizmo' }, variants: [variant()] }] as never),
    );
    assert.equal('resource' in created[0] && created[0].resource.handle, 'gizmo-2');
    const lookups = queries.filter((q) => /^select "handle" from "items"/.test(q.sql));
    assert.equal(lookups.length, 2, 'the slug, then its neighbours');
    for (const query of lookups) {
      if (ctx().backend === 'postgres') {
        const plan = await db.connection().execute(async (c) => {
          // Nor a scan of the whole table or of the business's rows, so that the plan shows what the index can do.
          await sql`set enable_seqscan = off`.execute(c);
          await sql`set enable_bitmapscan = off`.execute(c);
          try {
            const [row] = (
              await c.executeQuery<{ 'QUERY PLAN': unknown }>(
                CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
              )
            ).rows;
            return JSON.stringify(row['QUERY PLAN']);
          } finally {
            await sql`reset enable_seqscan`.execute(c);
            await sql`reset enable_bitmapscan`.execute(c);
          }
        });
        assert.match(plan, /"Index Cond":"[^"]*handle/, plan);
      } else {
        const plan = (
          await db.executeQuery<{ detail: string }>(
            CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
          )
        ).rows
          .map((r) => r.detail)
          .join('; ');
        assert.match(plan, /USING INDEX \w+ \(business_id=\? AND handle/, plan);
      }
    }
  });

  it('answers 409 when the handle is taken between its check and its insert: the unique index decides', async () => {
    const t = await ctx().createTenant();
    const db = ctx().db;
    // A trigger takes the handle just before the item's own insert, as another write would.
    if (ctx().backend === 'sqlite') {
      await sql`create trigger steal_handle before insert on items when new.name = 'Racer'
        begin insert into items (id, business_id, name, handle, type, status, created_at, updated_at)
        values (new.id || '_thief', new.business_id, 'Thief', new.handle, 'OTHER', 'ACTIVE', new.created_at, new.updated_at);
        end`.execute(db);
    } else {
      await sql`create function steal_handle() returns trigger language plpgsql as $$ begin
        insert into items (id, business_id, name, handle, type, status, created_at, updated_at)
        values (new.id || '_thief', new.business_id, 'Thief', new.handle, 'OTHER', 'ACTIVE', new.created_at, new.updated_at);
        return new; end $$`.execute(db);
      await sql`create trigger steal_handle before insert on items for each row when (new.name = 'Racer')
        execute function steal_handle()`.execute(db);
    }
    try {
      const res = await ctx().request('POST', '/api/v1/items', {
        as: t,
        body: { item: { name: 'Racer' }, variants: [variant()] },
      });
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.errorCode, 'CONFLICT');
      assert.equal(res.body.message, "An item with handle 'racer' already exists");
    } finally {
      await sql`drop trigger steal_handle${ctx().backend === 'sqlite' ? sql`` : sql` on items`}`.execute(db);
      if (ctx().backend === 'postgres') await sql`drop function steal_handle()`.execute(db);
    }
  });

  it('answers variantIds in the order the variants were sent, whatever their sequence, and shows variants by sequence', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: {
        item: { name: 'Shirt' },
        variants: [variant({ variantName: 'Large', sequence: 2 }), variant({ variantName: 'Small', sequence: 1 })],
      },
    });
    assert.equal(res.status, 201);
    const got = await ctx().request('GET', `/api/v1/items/${res.body.id}`, { as: t });
    assert.deepEqual(
      got.body.variants.map((v: { variantName: string }) => v.variantName),
      ['Small', 'Large'],
    );
    const byId = new Map(got.body.variants.map((v: { id: string; variantName: string }) => [v.id, v.variantName]));
    assert.deepEqual(
      res.body.variantIds.map((id: string) => byId.get(id)),
      ['Large', 'Small'],
    );
    // The event's item is the item as a GET shows it.
    const events = await ctx().request('GET', '/api/v1/events?limit=100', { as: t });
    const created = events.body.items.find((e: { type: string }) => e.type === 'item.created');
    assert.deepEqual(created.data.object, got.body);
  });

  it('rejects properties that are too deep or use forbidden keys', async () => {
    const t = await ctx().createTenant();
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { n: deep };
    const tooDeep = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'X', properties: deep }, variants: [variant()] },
    });
    assert.equal(tooDeep.status, 400);
    assert.match(tooDeep.body.fieldErrors['item.properties'], /levels deep/);
    const forbidden = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'X', properties: { a: { prototype: 1 } } }, variants: [variant()] },
    });
    assert.equal(forbidden.status, 400);
    assert.match(forbidden.body.fieldErrors['item.properties'], /prototype/);
  });

  securityCases(ctx, {
    method: 'POST',
    url: () => '/api/v1/items',
    body: { item: { name: 'X' }, variants: [variant()] },
    crossTenant: false,
  });
});

describeEachBackend('GET /api/v1/items/:id', (ctx) => {
  it('gives 404 "Item not found" for an unknown id', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('GET', '/api/v1/items/itm_unknown', { as: t });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'Item not found');
  });

  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/items/${(await createItem(c, owner)).id}` });
});

describeEachBackend('PATCH /api/v1/items/:id', (ctx) => {
  it('updates fields, deep-merges properties, and manages variants in one call', async () => {
    const t = await ctx().createTenant();
    const { id, variantIds } = await createItem(ctx(), t, {
      item: { name: 'Widget', properties: { unleashed: { guid: '123' } } },
      variants: [variant({ variantName: 'A' }), variant({ variantName: 'B' })],
    });
    const res = await ctx().request('PATCH', `/api/v1/items/${id}`, {
      as: t,
      body: {
        name: 'Widget 2',
        brand: 'Acme',
        description: null,
        properties: { unleashed: { code: 'W2' }, sage: null },
        updateVariants: [{ id: variantIds[0], price: 20, properties: { x: 1 } }],
        deleteVariants: [variantIds[1]],
        createVariants: [variant({ variantName: 'C', price: 3 })],
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.name, 'Widget 2');
    assert.equal(res.body.brand, 'Acme');
    assert.deepEqual(res.body.properties, { unleashed: { guid: '123', code: 'W2' }, sage: null });
    assert.deepEqual(
      res.body.variants.map((v: any) => [v.variantName, v.price, v.sequence]),
      [
        ['A', 20, 1],
        ['C', 3, 3],
      ],
    );
    assert.deepEqual(res.body.variants[0].properties, { x: 1 });
    assert.ok(res.body.updatedAt > res.body.createdAt || res.body.updatedAt === res.body.createdAt);
  });

  it('gives 400 for an empty body and 404 listing unknown variant ids', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    const empty = await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: {} });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.message, 'No valid fields provided for update');
    assert.equal(empty.body.error, 'No valid fields provided for update');
    // Empty lists ask for nothing either: the same 400 as orders and buyers give, no new version, no event.
    const lists = await ctx().request('PATCH', `/api/v1/items/${id}`, {
      as: t,
      body: { createVariants: [], updateVariants: [], deleteVariants: [] },
    });
    assert.equal(lists.status, 400);
    assert.equal(lists.body.message, 'No valid fields provided for update');
    const after = await ctx().request('GET', `/api/v1/items/${id}`, { as: t });
    const events = await ctx().request('GET', `/api/v1/items/${id}/events`, { as: t });
    assert.equal(after.body.updatedAt, after.body.createdAt);
    assert.deepEqual(
      events.body.items.map((e: { type: string }) => e.type),
      ['item.created'],
    );
    const missing = await ctx().request('PATCH', `/api/v1/items/${id}`, {
      as: t,
      body: { updateVariants: [{ id: 'var_nope', price: 1 }], deleteVariants: ['var_gone'] },
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'Item variant(s) not found: var_nope, var_gone');
  });

  it('keeps at least one variant, and writes nothing when a part fails', async () => {
    const t = await ctx().createTenant();
    const { id, variantIds } = await createItem(ctx(), t);
    const res = await ctx().request('PATCH', `/api/v1/items/${id}`, {
      as: t,
      body: { name: 'Changed', deleteVariants: variantIds },
    });
    assert.equal(res.status, 400);
    const got = await ctx().request('GET', `/api/v1/items/${id}`, { as: t });
    assert.equal(got.body.name, 'Blue Widget');
    assert.equal(got.body.variants.length, 1);
  });

  it('rejects handle and type, which PATCH does not take', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    const res = await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: { handle: 'x', type: 'OTHER' } });
    assert.equal(res.status, 400);
    assert.deepEqual(Object.keys(res.body.fieldErrors).sort(), ['handle', 'type']);
  });

  securityCases(ctx, {
    method: 'PATCH',
    url: async (c, owner) => `/api/v1/items/${(await createItem(c, owner)).id}`,
    body: { name: 'Stolen' },
  });
});

describeEachBackend('DELETE /api/v1/items/:id', (ctx) => {
  it('soft-deletes the item and its variants: 204, then 404, rows retained', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    const res = await ctx().request('DELETE', `/api/v1/items/${id}`, { as: t });
    assert.equal(res.status, 204);
    assert.equal(res.body, undefined);
    assert.equal((await ctx().request('GET', `/api/v1/items/${id}`, { as: t })).status, 404);
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${id}`, { as: t })).status, 404);
    assert.equal((await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: { name: 'x' } })).status, 404);
    const row = await ctx().db.selectFrom('items').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(row.deleted_at);
    assert.equal(row.status, 'DELETED');
    const variants = await ctx()
      .db.selectFrom('item_variants')
      .select('deleted_at')
      .where('item_id', '=', id)
      .execute();
    assert.ok(variants.length === 1 && variants.every((v) => v.deleted_at));
  });

  securityCases(ctx, { method: 'DELETE', url: async (c, owner) => `/api/v1/items/${(await createItem(c, owner)).id}` });
});

describeEachBackend('GET /api/v1/items', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/items', crossTenant: false });

  it('pages newest first with the standard envelope, and bounds limit', async () => {
    const t = await ctx().createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createItem(ctx(), t, { item: { name: `Item ${i}` } })).id);
    const first = await ctx().request('GET', '/api/v1/items?limit=2', { as: t });
    assert.equal(first.status, 200);
    assert.equal(first.body.total, 5);
    assert.equal(first.body.page, 1);
    assert.equal(first.body.pageSize, 2);
    const all: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await ctx().request('GET', `/api/v1/items?limit=2&page=${page}`, { as: t });
      all.push(...res.body.items.map((i: any) => i.id));
    }
    assert.deepEqual(all, [...ids].reverse());
    const defaults = await ctx().request('GET', '/api/v1/items', { as: t });
    assert.equal(defaults.body.pageSize, 20);
    for (const bad of ['limit=101', 'limit=0', 'page=0', 'page=x']) {
      const res = await ctx().request('GET', `/api/v1/items?${bad}`, { as: t });
      assert.equal(res.status, 400, bad);
      assert.ok(res.body.fieldErrors[bad.split('=')[0]], bad);
    }
  });

  it('filters by status, updatedSince (strict) and includeDeleted', async () => {
    const t = await ctx().createTenant();
    const a = await createItem(ctx(), t, { item: { name: 'A', status: 'DRAFT' } });
    const b = await createItem(ctx(), t, { item: { name: 'B' } });
    const drafts = await ctx().request('GET', '/api/v1/items?status=DRAFT', { as: t });
    assert.deepEqual(
      drafts.body.items.map((i: any) => i.id),
      [a.id],
    );
    const bRow = (await ctx().request('GET', `/api/v1/items/${b.id}`, { as: t })).body;
    const since = await ctx().request('GET', `/api/v1/items?updatedSince=${encodeURIComponent(bRow.updatedAt)}`, {
      as: t,
    });
    assert.ok(!since.body.items.some((i: any) => i.id === b.id), 'strictly greater');
    await ctx().request('DELETE', `/api/v1/items/${a.id}`, { as: t });
    assert.equal((await ctx().request('GET', '/api/v1/items', { as: t })).body.total, 1);
    const withDeleted = await ctx().request('GET', '/api/v1/items?includeDeleted=true', { as: t });
    assert.equal(withDeleted.body.total, 2);
    assert.ok(withDeleted.body.items.find((i: any) => i.id === a.id).deletedAt);
    const bad = await ctx().request('GET', '/api/v1/items?updatedSince=yesterday', { as: t });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.fieldErrors.updatedSince);
  });

  it('filters by property path, value (as JSON scalar text) and existence (null counts as present)', async () => {
    const t = await ctx().createTenant();
    const num = await createItem(ctx(), t, { item: { name: 'N', properties: { sage200Evo: { salesOrderNo: 456 } } } });
    const str = await createItem(ctx(), t, {
      item: { name: 'S', properties: { sage200Evo: { salesOrderNo: '456' } } },
    });
    const nul = await createItem(ctx(), t, { item: { name: 'Z', properties: { sage200Evo: { salesOrderNo: null } } } });
    const none = await createItem(ctx(), t, { item: { name: 'O', properties: { unleashed: { guid: 'g' } } } });
    const bare = await createItem(ctx(), t, { item: { name: 'B' } });
    const ids = async (q: string) =>
      ((await ctx().request('GET', `/api/v1/items?${q}`, { as: t })).body.items as any[]).map((i) => i.id).sort();
    const path = 'propertyPath=sage200Evo.salesOrderNo';
    assert.deepEqual(await ids(`${path}&propertyValue=456`), [num.id, str.id].sort());
    assert.deepEqual(await ids(`${path}&propertyExists=true`), [num.id, str.id, nul.id].sort());
    assert.deepEqual(await ids(`${path}&propertyExists=false`), [none.id, bare.id].sort());
    assert.deepEqual(await ids(`propertyPath=unleashed.guid&propertyValue=g`), [none.id]);
    assert.deepEqual(await ids(`${path}&propertyValue=4.56e2`), [num.id], 'numbers compare by value');
    assert.deepEqual(await ids(`${path}&propertyValue=null`), [], 'null never matches a value');
    const tiny = await createItem(ctx(), t, {
      item: { name: 'T', properties: { n: { small: 1e-7, big: 1e21, flag: true } } },
    });
    assert.deepEqual(await ids('propertyPath=n.small&propertyValue=1e-7'), [tiny.id]);
    assert.deepEqual(await ids('propertyPath=n.big&propertyValue=1e%2B21'), [tiny.id]);
    assert.deepEqual(await ids('propertyPath=n.flag&propertyValue=true'), [tiny.id]);
  });

  it('enforces the property filter rules with 400', async () => {
    const t = await ctx().createTenant();
    const cases: Array<[string, string]> = [
      ['propertyValue=1', 'propertyPath'],
      ['propertyExists=true', 'propertyPath'],
      ['propertyPath=a&propertyValue=1&propertyExists=true', 'propertyValue'],
      [`propertyPath=${Array(17).fill('a').join('.')}`, 'propertyPath'],
      ["propertyPath=a.b'c", 'propertyPath'],
      ['propertyPath=a&propertyExists=maybe', 'propertyExists'],
    ];
    for (const [q, field] of cases) {
      const res = await ctx().request('GET', `/api/v1/items?${q}`, { as: t });
      assert.equal(res.status, 400, q);
      assert.ok(res.body.fieldErrors[field], `${q}: ${JSON.stringify(res.body)}`);
    }
  });

  it("never lists another business's items", async () => {
    const a = await ctx().createTenant();
    const b = await ctx().createTenant();
    await createItem(ctx(), a);
    const res = await ctx().request('GET', '/api/v1/items', { as: b });
    assert.equal(res.body.total, 0);
  });
});

describeEachBackend('Item input edge cases', (ctx) => {
  it('bounds merged properties to 64 KiB, not only each PATCH', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    const chunk = 'x'.repeat(30_000);
    assert.equal(
      (await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: { properties: { a: chunk } } })).status,
      200,
    );
    assert.equal(
      (await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: { properties: { b: chunk } } })).status,
      200,
    );
    const third = await ctx().request('PATCH', `/api/v1/items/${id}`, { as: t, body: { properties: { c: chunk } } });
    assert.equal(third.status, 400);
    assert.match(third.body.fieldErrors.properties, /bytes/);
    const got = await ctx().request('GET', `/api/v1/items/${id}`, { as: t });
    assert.deepEqual(Object.keys(got.body.properties), ['a', 'b']);
  });

  it('answers a leap-second timestamp with 400, not 500', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('GET', '/api/v1/items?updatedSince=2016-12-31T23:59:60Z', { as: t });
    assert.equal(res.status, 400);
    assert.equal(res.body.fieldErrors.updatedSince, 'Invalid date-time');
    assert.equal(res.body.hint, DATE_TIME_HINT, 'not the + hint: the form a time takes');
  });

  it('shows the form a time takes when a time field is refused, in a query and in a body', async () => {
    const t = await ctx().createTenant();
    const day = await ctx().request('GET', '/api/v1/items?updatedSince=2026-01-01', { as: t });
    assert.equal(day.status, 400);
    assert.equal(day.body.hint, DATE_TIME_HINT);
    const buyers = await ctx().request('GET', '/api/v1/buyers', { as: t });
    const buyerId = buyers.body.items[0]?.id ?? 'phm_01m96spsw5pepqgchsbkxqyh1b';
    const order = await ctx().request('POST', `/api/v1/buyers/${buyerId}/orders`, {
      as: t,
      body: { expectedDeliveryAt: '2030-01-15', orderItems: [{ itemVariantId: 'var_x', quantity: 1 }] },
    });
    assert.equal(order.status, 400, JSON.stringify(order.body));
    assert.equal(order.body.fieldErrors.expectedDeliveryAt, 'Invalid date-time');
    assert.equal(order.body.hint, DATE_TIME_HINT);
    // Other refusals carry no such hint.
    const unnamed = await ctx().request('GET', '/api/v1/items?limit=0', { as: t });
    assert.equal(unnamed.status, 400);
    assert.equal(unnamed.body.hint, undefined);
  });

  it('says why a time with an unencoded + offset is refused: the query string made it a space', async () => {
    const t = await ctx().createTenant();
    const plus = await ctx().request('GET', '/api/v1/items?updatedSince=2020-01-01T00:00:00.000+10:00', { as: t });
    assert.equal(plus.status, 400);
    assert.equal(plus.body.fieldErrors.updatedSince, 'Invalid date-time');
    assert.equal(plus.body.hint, PLUS_AS_SPACE_HINT);
    const encoded = await ctx().request('GET', '/api/v1/items?updatedSince=2020-01-01T00:00:00.000%2B10:00', { as: t });
    assert.equal(encoded.status, 200);
  });
});

describeEachBackend('Item list and update details', (ctx) => {
  it('treats status=DELETED as a request for deleted items', async () => {
    const t = await ctx().createTenant();
    const { id } = await createItem(ctx(), t);
    await ctx().request('DELETE', `/api/v1/items/${id}`, { as: t, headers: { 'content-type': 'application/json' } });
    const res = await ctx().request('GET', '/api/v1/items?status=DELETED', { as: t });
    assert.deepEqual(
      res.body.items.map((i: any) => i.id),
      [id],
    );
  });

  it('rejects a variant update that changes nothing, so updatedAt never moves for nothing', async () => {
    const t = await ctx().createTenant();
    const { id, variantIds } = await createItem(ctx(), t);
    const res = await ctx().request('PATCH', `/api/v1/items/${id}`, {
      as: t,
      body: { updateVariants: [{ id: variantIds[0] }] },
    });
    assert.equal(res.status, 400);
    assert.ok(res.body.fieldErrors['updateVariants.0']);
  });

  it('names the text it received for a query number', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('GET', '/api/v1/items?limit=1.5', { as: t });
    assert.equal(res.body.fieldErrors.limit, "Expected integer, received '1.5'");
  });
});
