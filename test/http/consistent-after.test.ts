import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';

describeEachBackend('Consistent-After and Supplyline-Position', (ctx) => {
  it('takes an event sequence or a position on every read, and refuses anything else with 400', async () => {
    const t = await ctx().createTenant();
    const created = await ctx().request('POST', '/api/v1/buyers', { as: t, body: { buyer: { name: 'Acme' } } });
    assert.equal(created.status, 201);
    for (const value of ['1', '0/0', '16/B374D848']) {
      const read = await ctx().request('GET', `/api/v1/buyers/${created.body.id}`, {
        as: t,
        headers: { 'consistent-after': value },
      });
      assert.equal(read.status, 200, value);
      assert.equal(read.body.id, created.body.id);
    }
    for (const value of ['yesterday', '-1', '0/16B3740/1', '1'.repeat(40)]) {
      for (const path of [`/api/v1/buyers/${created.body.id}`, '/api/v1/buyers', '/api/v1/events?after=0']) {
        const read = await ctx().request('GET', path, { as: t, headers: { 'consistent-after': value } });
        assert.equal(read.status, 400, `${path} ${value}`);
        assert.equal(read.body.errorCode, 'VALIDATION_ERROR');
        assert.match(read.body.message, /Consistent-After/);
      }
    }
  });

  it('names a position only where reads may go to a replica: without DATABASE_REPLICA_URLS nothing changes', async () => {
    const t = await ctx().createTenant();
    const created = await ctx().request('POST', '/api/v1/buyers', { as: t, body: { buyer: { name: 'Acme' } } });
    const read = await ctx().request('GET', `/api/v1/buyers/${created.body.id}`, { as: t });
    const replicated = ctx().database.handle.replicas !== undefined;
    assert.equal(created.headers['supplyline-position'] !== undefined, replicated);
    if (replicated) assert.match(String(created.headers['supplyline-position']), /^[0-9A-F]+\/[0-9A-F]+$/);
    else assert.equal(read.headers['supplyline-position'], undefined);
  });

  it('documents Consistent-After on every GET of the API and Supplyline-Position on its answers', async () => {
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    let gets = 0;
    for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const names = (operation.parameters ?? []).filter((p: any) => p.in === 'header').map((p: any) => p.name);
        assert.equal(names.includes('consistent-after'), method === 'get', `${method} ${path}`);
        if (method === 'get') gets++;
        for (const [status, response] of Object.entries<any>(operation.responses))
          if (Number(status) < 300) assert.ok(response.headers?.['Supplyline-Position'], `${method} ${path} ${status}`);
      }
    }
    assert.ok(gets > 20);
  });
});
