import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/webhooks.ts';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ type: 'order.updated', data: { totalAmount: '25.00' } });

function sign(secret: string, id: string, at: Date, payload = body) {
  const signature = new Webhook(secret).sign(id, at, payload);
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}

/** What the reference library says: the parsed body, or 'rejected'. */
function reference(secret: string, payload: string, headers: Record<string, string>) {
  try { return new Webhook(secret).verify(payload, headers); } catch { return 'rejected'; }
}
async function ours(secrets: string | string[], payload: string, headers: Record<string, string>) {
  try { return await verifyWebhook(payload, headers, secrets); } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return 'rejected';
  }
}

describe('verifyWebhook agrees with the standardwebhooks package', () => {
  const secret = newSecret();
  it('accepts a valid signature', async () => {
    const headers = sign(secret, 'msg_1', new Date());
    assert.deepEqual(reference(secret, body, headers), JSON.parse(body));
    assert.deepEqual(await ours(secret, body, headers), JSON.parse(body));
    assert.deepEqual(await verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret), JSON.parse(body));
  });
  it('rejects a tampered body, id, timestamp or signature', async () => {
    const headers = sign(secret, 'msg_2', new Date());
    const cases: Array<[string, Record<string, string>]> = [
      [body.replace('25.00', '2500'), headers],
      [body, { ...headers, 'webhook-id': 'msg_3' }],
      [body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }],
      [body, { ...headers, 'webhook-signature': headers['webhook-signature'].slice(0, -4) + 'AAA=' }],
      [body, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }],
    ];
    for (const [payload, h] of cases) {
      assert.equal(reference(secret, payload, h), 'rejected');
      assert.equal(await ours(secret, payload, h), 'rejected');
    }
  });
  it('rejects a signature older or newer than five minutes, and accepts one within', async () => {
    for (const [offsetSeconds, expected] of [[-301, 'rejected'], [301, 'rejected'], [-290, 'ok'], [290, 'ok']] as const) {
      const headers = sign(secret, 'msg_4', new Date(Date.now() + offsetSeconds * 1000));
      const theirs = reference(secret, body, headers) === 'rejected' ? 'rejected' : 'ok';
      const mine = (await ours(secret, body, headers)) === 'rejected' ? 'rejected' : 'ok';
      assert.equal(theirs, expected, `reference at ${offsetSeconds}s`);
      assert.equal(mine, expected, `ours at ${offsetSeconds}s`);
    }
  });
  it('accepts either of two secrets while rotating, and a header carrying both signatures', async () => {
    const old = newSecret();
    const headersOld = sign(old, 'msg_5', new Date());
    const headersNew = sign(secret, 'msg_5', new Date());
    assert.deepEqual(await ours([secret, old], body, headersOld), JSON.parse(body));
    assert.deepEqual(await ours([secret, old], body, headersNew), JSON.parse(body));
    assert.equal(await ours([secret], body, headersOld), 'rejected');
    assert.equal(reference(secret, body, headersOld), 'rejected');
    const both = { ...headersNew, 'webhook-signature': `${headersOld['webhook-signature']} ${headersNew['webhook-signature']}` };
    assert.deepEqual(reference(secret, body, both), JSON.parse(body));
    assert.deepEqual(await ours(secret, body, both), JSON.parse(body));
    assert.equal(await ours(newSecret(), body, both), 'rejected');
  });
});
