import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { isPublicAddress } from '../../src/webhooks/address.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { startReceiver } from '../helpers/receiver.ts';

describe('webhook addresses', () => {
  it('refuses every loopback, private, link-local, multicast and reserved range, v4, v6 and v4-mapped v6', () => {
    const refused = [
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '239.255.255.250',
      '192.0.2.1',
      '198.18.0.1',
      '198.51.100.7',
      '203.0.113.9',
      '240.0.0.1',
      '192.0.0.8',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '2001:db8::1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::1',
      '2001::1',
      '::ffff:127.0.0.1',
      '::ffff:10.1.2.3',
      '::ffff:169.254.169.254',
      '::ffff:7f00:1',
      // IPv4-compatible IPv6 (::/96, deprecated): judged as the IPv4 address it holds, and refused whole.
      '::7f00:1',
      '::127.0.0.1',
      '::a00:1',
      '::808:808',
      'not an address',
    ];
    for (const address of refused) assert.equal(isPublicAddress(address), false, address);
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isPublicAddress(address), true, address);
    }
  });

  it('refuses, at delivery, a name that resolves to 127.0.0.1 and an IP literal in the URL, before any byte is sent', async () => {
    const receiver = await startReceiver();
    const sender = createSender({ timeoutMs: 2000, allowPrivateNetworks: false });
    try {
      for (const url of [
        `https://localhost:${receiver.port}/hook`,
        `https://127.0.0.1:${receiver.port}/hook`,
        `https://[::1]:${receiver.port}/hook`,
        `https://[::ffff:127.0.0.1]:${receiver.port}/hook`,
        `https://0x7f.1:${receiver.port}/hook`,
      ]) {
        const result = await sender.send(url, {}, '{}');
        assert.equal(result.status, null, url);
        assert.match(result.error ?? '', /private or reserved address/, url);
      }
      const plain = await sender.send(`http://example.com:${receiver.port}/hook`, {}, '{}');
      assert.match(plain.error ?? '', /http: URLs are not allowed/);
      assert.equal(receiver.received.length, 0);
    } finally {
      sender.close();
      await receiver.close();
    }
  });

  it('reaches a loopback receiver, over http, when private networks are allowed', async () => {
    const receiver = await startReceiver();
    const sender = createSender({ timeoutMs: 2000, allowPrivateNetworks: true });
    try {
      const result = await sender.send(`http://localhost:${receiver.port}/hook`, {}, '{"ok":true}');
      assert.equal(result.status, 200);
      assert.equal(receiver.received.length, 1);
    } finally {
      sender.close();
      await receiver.close();
    }
  });
});

describeEachBackend(
  'webhook endpoints without private networks',
  (ctx) => {
    it('refuses private and loopback IP literals and http when the endpoint is saved', async () => {
      const t = await ctx().createTenant();
      for (const url of [
        'https://127.0.0.1/hook',
        'https://[::1]/hook',
        'https://10.0.0.7/hook',
        'https://169.254.169.254/latest',
        'https://[::7f00:1]/hook',
        'http://hooks.example.com/',
        'https://hooks.example.com:0/',
        'https:hooks.example.com',
      ]) {
        const res = await ctx().request('POST', '/api/v1/webhook-endpoints', { as: t, body: { url } });
        assert.equal(res.status, 400, url);
        assert.ok(res.body.fieldErrors.url, url);
      }
    });

    it('accepts a name that resolves to a private address, then refuses to deliver to it, logging why', async () => {
      const receiver = await startReceiver();
      try {
        const t = await ctx().createTenant();
        const res = await ctx().request('POST', '/api/v1/webhook-endpoints', {
          as: t,
          body: { url: `https://localhost:${receiver.port}/hook` },
        });
        assert.equal(res.status, 201);
        const test = await ctx().request('POST', `/api/v1/webhook-endpoints/${res.body.id}/test`, { as: t });
        assert.equal(test.status, 202);
        const deadline = Date.now() + 10_000;
        let log: any[] = [];
        while (Date.now() < deadline) {
          log = (await ctx().request('GET', `/api/v1/webhook-endpoints/${res.body.id}/deliveries`, { as: t })).body
            .items;
          if (log[0]?.attempts.length > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.match(log[0].attempts[0].error, /localhost resolves to a private or reserved address/);
        assert.doesNotMatch(log[0].attempts[0].error, /127\.0\.0\.1|::1/, 'the internal address is not told');
        assert.equal(receiver.received.length, 0);
      } finally {
        await receiver.close();
      }
    });
  },
  { config: { webhooks: { ...loadConfig({}).webhooks, retrySchedule: [0, 60] } } },
);
