import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/webhooks.ts';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ type: 'order.updated', data: { totalAmount: '25.00' } });

function sign(secret: string, id: string, at: Date, payload = body) {
  const signature = new Webhook(secret).sign(id, at, payload);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

/** What the reference library says: the parsed body, or 'rejected'. */
function reference(secret: string, payload: string, headers: Record<string, string>) {
  try {
    return new Webhook(secret).verify(payload, headers);
  } catch {
    return 'rejected';
  }
}
async function ours(secrets: string | string[], payload: string, headers: Record<string, string>) {
  try {
    return await verifyWebhook(payload, headers, secrets);
  } catch (error) {
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
    assert.deepEqual(
      await verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret),
      JSON.parse(body),
    );
  });
  it('rejects a tampered body, id, timestamp or signature', async () => {
    const headers = sign(secret, 'msg_2', new Date());
    const cases: Array<[string, Record<string, string>]> = [
      [body.replace('25.00', '2500'), headers],
      [body, { ...headers, 'webhook-id': 'msg_3' }],
      [body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }],
      [body, { ...headers, 'webhook-signature': `${headers['webhook-signature'].slice(0, -4)}AAA=` }],
      [body, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }],
    ];
    for (const [payload, h] of cases) {
      assert.equal(reference(secret, payload, h), 'rejected');
      assert.equal(await ours(secret, payload, h), 'rejected');
    }
  });
  it('rejects a signature older or newer than five minutes, and accepts one within', async () => {
    for (const [offsetSeconds, expected] of [
      [-310, 'rejected'],
      [310, 'rejected'],
      [-290, 'ok'],
      [290, 'ok'],
    ] as const) {
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
    const both = {
      ...headersNew,
      'webhook-signature': `${headersOld['webhook-signature']} ${headersNew['webhook-signature']}`,
    };
    assert.deepEqual(reference(secret, body, both), JSON.parse(body));
    assert.deepEqual(await ours(secret, body, both), JSON.parse(body));
    assert.equal(await ours(newSecret(), body, both), 'rejected');
  });
});

describe('verifyWebhook takes headers as frameworks pass them, and agrees with the reference on edge cases', () => {
  const secret = newSecret();
  const outcome = async (payload: string, headers: Parameters<typeof verifyWebhook>[1]) => {
    try {
      return { ok: await verifyWebhook(payload, headers, secret) };
    } catch (error) {
      return { error: error instanceof WebhookVerificationError ? 'rejected' : (error as Error).name };
    }
  };
  const theirs = (payload: string, headers: Record<string, string>) => {
    try {
      return { ok: new Webhook(secret).verify(payload, headers) };
    } catch (error) {
      return { error: (error as Error).name === 'WebhookVerificationError' ? 'rejected' : (error as Error).name };
    }
  };

  it("accepts capitalised names in a plain object (AWS Lambda), Fetch Headers and Node's IncomingHttpHeaders", async () => {
    const signed = sign(secret, 'msg_c', new Date());
    const capitalised = {
      'Webhook-Id': signed['webhook-id'],
      'Webhook-Timestamp': signed['webhook-timestamp'],
      'WEBHOOK-SIGNATURE': signed['webhook-signature'],
    };
    assert.deepEqual(theirs(body, capitalised), { ok: JSON.parse(body) });
    assert.deepEqual(await outcome(body, capitalised), { ok: JSON.parse(body) });
    assert.deepEqual(await outcome(body, new Headers(capitalised)), { ok: JSON.parse(body) });
    // IncomingHttpHeaders: lower-case names, values that may be arrays.
    const incoming: import('node:http').IncomingHttpHeaders = {
      ...signed,
      'x-forwarded-for': ['10.0.0.1', '10.0.0.2'] as never,
    };
    assert.deepEqual(await outcome(body, incoming), { ok: JSON.parse(body) });
  });

  it('behaves as the reference on an empty body, odd timestamps and signatures, and missing headers', async () => {
    const now = new Date();
    const seconds = String(Math.floor(now.getTime() / 1000));
    const cases: Array<[string, string, Record<string, string>]> = [];
    const add = (name: string, payload: string, headers: Record<string, string>) =>
      cases.push([name, payload, headers]);
    add('empty body', '', sign(secret, 'msg_e', now, ''));
    add('whitespace body', ' ', sign(secret, 'msg_w', now, ' '));
    add('timestamp with trailing letters (parseInt reads the number)', body, {
      ...sign(secret, 'msg_t', now),
      'webhook-timestamp': `${seconds}abc`,
    });
    add('timestamp with a leading space', body, { ...sign(secret, 'msg_t', now), 'webhook-timestamp': ` ${seconds}` });
    add('timestamp not a number', body, { ...sign(secret, 'msg_t', now), 'webhook-timestamp': 'soon' });
    add('timestamp in milliseconds', body, {
      ...sign(secret, 'msg_t', now),
      'webhook-timestamp': String(now.getTime()),
    });
    const signed = sign(secret, 'msg_s', now);
    add('signature with a third part', body, {
      ...signed,
      'webhook-signature': `${signed['webhook-signature']},extra`,
    });
    add('signatures separated by two spaces', body, {
      ...signed,
      'webhook-signature': `v1,AAAA  ${signed['webhook-signature']}`,
    });
    add('signature without a version', body, { ...signed, 'webhook-signature': signed['webhook-signature'].slice(3) });
    add('empty signature', body, { ...signed, 'webhook-signature': '' });
    add('missing id', body, {
      'webhook-timestamp': signed['webhook-timestamp'],
      'webhook-signature': signed['webhook-signature'],
    });
    add('empty id', body, { ...signed, 'webhook-id': '' });
    add('body not JSON, signed', 'not json', sign(secret, 'msg_j', now, 'not json'));
    add('both cases of one name, the last wins', body, { ...signed, 'Webhook-Id': 'msg_other' });
    for (const [name, payload, headers] of cases) {
      assert.deepEqual(await outcome(payload, headers), theirs(payload, headers), name);
    }
  });
});
