import assert from 'node:assert/strict';
import { it } from 'node:test';
import { addressAllowed, parseCidrs } from '../../src/businesses/allowlist.ts';
import { rotateApiKey, setKeyAllowlist } from '../../src/businesses/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';

it('reads IPv4 and IPv6 CIDRs and single addresses, and refuses anything else', () => {
  assert.deepEqual(parseCidrs(' 10.0.0.0/8,2001:DB8::/32, 203.0.113.7 ,10.0.0.0/8'), [
    '10.0.0.0/8',
    '2001:db8::/32',
    '203.0.113.7/32',
  ]);
  for (const bad of ['10.0.0.0/33', '2001:db8::/129', 'example.com', '10.0.0.1/8/8', '10.0.0.0/-1', '10.0.0/8', '']) {
    assert.throws(() => parseCidrs(bad), /Not an IPv4 or IPv6 address or CIDR|at least one/, bad);
  }
  assert.throws(() => parseCidrs(Array.from({ length: 51 }, (_, i) => `10.0.0.${i}`).join(',')), /At most 50/);
  const cidrs = parseCidrs('10.0.0.0/8,2001:db8::/32');
  assert.ok(addressAllowed(cidrs, '10.200.1.1'));
  assert.ok(addressAllowed(cidrs, '::ffff:10.1.1.1'), 'an IPv4 address mapped into IPv6');
  assert.ok(addressAllowed(cidrs, '2001:db8:1::5'));
  assert.ok(!addressAllowed(cidrs, '11.0.0.1'));
  assert.ok(!addressAllowed(cidrs, '2001:db9::1'));
  assert.ok(!addressAllowed(cidrs, 'not an address'));
});

const get = (c: TestContext, key: Tenant, remoteAddress: string, forwardedFor?: string) =>
  c.app.inject({
    method: 'GET',
    url: '/api/v1/items',
    remoteAddress,
    headers: { ...key.headers, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
  });

async function fence(c: TestContext, owner: Tenant, key: Tenant, cidrs: string | null) {
  const writes = createWriteRunner(c.db);
  assert.ok(
    await writes.run({ businessId: owner.businessId, actor: SYSTEM }, (ctx) =>
      setKeyAllowlist(ctx, key.keyId, cidrs ? parseCidrs(cidrs) : null),
    ),
  );
}

// The app's clock stands still until a test moves it on, instead of waiting.
let now = Date.now();

describeEachBackend(
  'API key allowlists',
  (ctx) => {
    it("lets a key be used only from its CIDRs, reads the socket's address, and ignores X-Forwarded-For unless TRUST_PROXY names the proxy", async () => {
      const owner = await ctx().createTenant();
      const key = await ctx().addKey(owner);
      await fence(ctx(), owner, key, '10.0.0.0/8, 2001:db8::/32');
      assert.equal((await get(ctx(), key, '10.1.2.3')).statusCode, 200);
      assert.equal((await get(ctx(), key, '2001:db8::7')).statusCode, 200);
      const refused = await get(ctx(), key, '192.0.2.1');
      assert.equal(refused.statusCode, 403);
      assert.deepEqual(
        [refused.json().errorCode, refused.json().message],
        ['FORBIDDEN', 'This API key may not be used from 192.0.2.1'],
      );
      // Without TRUST_PROXY a client cannot claim an address.
      assert.equal((await get(ctx(), key, '192.0.2.1', '10.1.1.1')).statusCode, 403);
      // Other keys of the business are not fenced.
      assert.equal((await get(ctx(), owner, '192.0.2.1')).statusCode, 200);
      // Rotation keeps the fence.
      const rotated = await createWriteRunner(ctx().db).run({ businessId: owner.businessId, actor: SYSTEM }, (c) =>
        rotateApiKey(c, key.keyId, 0),
      );
      const next = { ...key, apiKey: rotated!.apiKey, headers: { ...key.headers, 'x-api-key': rotated!.apiKey } };
      assert.equal((await get(ctx(), next, '192.0.2.1')).statusCode, 403);
      assert.equal((await get(ctx(), next, '10.9.9.9')).statusCode, 200);
    });

    it('takes a changed allowlist on the next check of the key (within 5 s on every instance), and lifts it with null', async () => {
      const owner = await ctx().createTenant();
      const key = await ctx().addKey(owner);
      assert.equal((await get(ctx(), key, '192.0.2.1')).statusCode, 200);
      await fence(ctx(), owner, key, '10.0.0.0/8');
      // A verified key is cached for authCacheMs (4 s), so the change shows once that has passed.
      now += ctx().config.authCacheMs - 1;
      assert.equal((await get(ctx(), key, '192.0.2.1')).statusCode, 200);
      now += 1;
      assert.equal((await get(ctx(), key, '192.0.2.1')).statusCode, 403);
      await fence(ctx(), owner, key, null);
      now += ctx().config.authCacheMs;
      assert.equal((await get(ctx(), key, '192.0.2.1')).statusCode, 200);
    });
  },
  { clock: () => now },
);

describeEachBackend(
  'API key allowlists behind a trusted proxy',
  (ctx) => {
    it('takes the client from X-Forwarded-For when the socket is a proxy TRUST_PROXY names, and only then', async () => {
      const owner = await ctx().createTenant();
      const key = await ctx().addKey(owner);
      await fence(ctx(), owner, key, '10.0.0.0/8');
      assert.equal((await get(ctx(), key, '127.0.0.1', '10.1.1.1')).statusCode, 200);
      assert.equal((await get(ctx(), key, '127.0.0.1', '192.0.2.1')).statusCode, 403);
      // A proxy it does not name: its X-Forwarded-For is not believed.
      assert.equal((await get(ctx(), key, '198.51.100.1', '10.1.1.1')).statusCode, 403);
      // A client that sends its own X-Forwarded-For through the proxy: the proxy's append is what counts.
      assert.equal((await get(ctx(), key, '127.0.0.1', '10.1.1.1, 192.0.2.1')).statusCode, 403);
    });
  },
  { config: { trustProxy: parseCidrs('127.0.0.1') } },
);
