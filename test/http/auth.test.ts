import { MALFORMED_KEY_HINT, UNAUTHORIZED_HINT } from '../../src/lib/errors.ts';
import { newApiKey } from '../../src/businesses/key-format.ts';
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { listApiKeys } from '../../src/businesses/repository.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { assertUnauthorized } from '../helpers/security.ts';

let now = Date.parse('2026-01-01T00:00:00.000Z');
const clock = () => now;

describeEachBackend(
  'Authentication',
  (ctx) => {
    it('accepts the headers in any letter case, including X-Business-ID', async () => {
      const t = await ctx().createTenant();
      for (const [b, k] of [
        ['X-Business-ID', 'X-API-Key'],
        ['x-business-id', 'x-api-key'],
        ['X-BUSINESS-ID', 'X-Api-Key'],
      ]) {
        const res = await ctx().request('GET', '/api/v1/items', { headers: { [b]: t.businessId, [k]: t.apiKey } });
        assert.equal(res.status, 200, `${b} ${k}`);
      }
    });

    it('gives one identical 401 body for every kind of failure, and says only whether the key was malformed', async () => {
      const typo = (key: string) => key.slice(0, 12) + (key[12] === 'A' ? 'B' : 'A') + key.slice(13);
      const t = await ctx().createTenant();
      const cases: Array<[Record<string, string>, string]> = [
        [{}, UNAUTHORIZED_HINT],
        [{ 'x-api-key': t.apiKey }, UNAUTHORIZED_HINT],
        [{ 'x-business-id': 'bus_unknown', 'x-api-key': t.apiKey }, UNAUTHORIZED_HINT],
        [{ 'x-business-id': t.businessId, 'x-api-key': newApiKey() }, UNAUTHORIZED_HINT],
        [{ 'x-business-id': t.businessId, 'x-api-key': 'wrong' }, MALFORMED_KEY_HINT],
        [{ 'x-business-id': t.businessId, 'x-api-key': 'x'.repeat(5000) }, MALFORMED_KEY_HINT],
        // One character wrong: the right shape, a wrong checksum, which the hint names.
        [{ 'x-business-id': t.businessId, 'x-api-key': typo(t.apiKey) }, MALFORMED_KEY_HINT],
      ];
      assert.match(MALFORMED_KEY_HINT, /the last 6 a checksum of the others/);
      for (const [headers, hint] of cases) {
        const res = await ctx().request('GET', '/api/v1/items', { headers });
        assertUnauthorized(res);
        assert.equal(res.body.hint, hint, JSON.stringify(headers).slice(0, 100));
      }
    });

    it('lets several keys be live at once, which makes rotation possible', async () => {
      const t = await ctx().createTenant();
      const second = await ctx().addKey(t);
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: t })).status, 200);
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: second })).status, 200);
      await ctx().revokeKey(t);
      now += 5000;
      assertUnauthorized(await ctx().request('GET', '/api/v1/items', { as: t }));
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: second })).status, 200);
    });

    it('stops accepting a revoked key within 5 seconds, even when it was cached', async () => {
      const t = await ctx().createTenant();
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: t })).status, 200);
      await ctx().revokeKey(t);
      now += 5000;
      assertUnauthorized(await ctx().request('GET', '/api/v1/items', { as: t }));
    });

    it('stores only a hash of the key, and records when it was last used', async () => {
      const t = await ctx().createTenant();
      const row = await ctx().db.selectFrom('api_keys').selectAll().where('id', '=', t.keyId).executeTakeFirstOrThrow();
      assert.notEqual(row.key_hash, t.apiKey);
      assert.match(row.key_hash, /^[0-9a-f]{64}$/);
      assert.ok(!JSON.stringify(row).includes(t.apiKey));
      await ctx().request('GET', '/api/v1/items', { as: t });
      const [key] = await listApiKeys(ctx().db, t.businessId);
      assert.ok(key.lastUsedAt);
    });
  },
  { clock },
);
