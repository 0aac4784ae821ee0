import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { displayPrefix, keyFormat, newApiKey } from '../../src/businesses/key-format.ts';
import { createAuthenticator } from '../../src/http/auth.ts';
import type { Db } from '../../src/db/types.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

const run = promisify(execFile);

/** Keys people and scanners recognise (issue 46): sl_live_, 30 random base62 characters and a CRC32 checksum. */
describe('API key format', () => {
  it('makes keys with a checksum that every one-character typo breaks', () => {
    const keys = [
      ...Array.from({ length: 200 }, () => newApiKey()),
      ...Array.from({ length: 50 }, () => newApiKey('test')),
    ];
    assert.equal(new Set(keys).size, keys.length);
    for (const [i, key] of keys.entries()) {
      assert.match(key, i < 200 ? /^sl_live_[0-9A-Za-z]{36}$/ : /^sl_test_[0-9A-Za-z]{36}$/);
      assert.equal(keyFormat(key), 'current');
      assert.equal(displayPrefix(key), key.slice(0, 12));
    }
    fc.assert(
      fc.property(
        fc.constantFrom(...keys),
        fc.nat(35),
        fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'),
        (key, at, char) => {
          const i = 8 + at;
          fc.pre(key[i] !== char);
          assert.equal(keyFormat(key.slice(0, i) + char + key.slice(i + 1)), 'malformed');
        },
      ),
    );
    assert.equal(keyFormat('0123456789abcdef0123456789abcdef'), 'legacy');
    for (const bad of [
      '',
      'sl_live_',
      `sl_prod_${keys[0].slice(8)}`,
      `${keys[0]}x`,
      keys[0].slice(0, -1),
      'not a key',
      '0123456789ABCDEF0123456789ABCDEF',
    ]) {
      assert.equal(keyFormat(bad), 'malformed', bad);
    }
    // A sandbox's test key has the same checksum rule: the prefix says the mode, the checksum the rest.
    assert.equal(keyFormat(`sl_test_${keys[0].slice(8)}`), 'current');
  });

  it('refuses a malformed key without asking the database', async () => {
    const untouchable = new Proxy(
      {},
      {
        get: () => {
          throw new Error('the database was asked');
        },
      },
    ) as unknown as Db;
    const authenticator = createAuthenticator(untouchable, 4000);
    assert.equal(await authenticator.verify('bus_1', `${newApiKey().slice(0, -1)}?`), null);
    assert.equal(await authenticator.verify('bus_1', 'sl_live_typo'), null);
    await assert.rejects(authenticator.verify('bus_1', newApiKey()), /the database was asked/);
  });

  it('checks a key offline with `supplyline key check`', async () => {
    const cli = (key: string) =>
      run(process.execPath, [...TYPESCRIPT, 'src/cli.ts', 'key', 'check', key], {
        env: { ...process.env, DATABASE_URL: 'postgres://127.0.0.1:1/none' },
      });
    assert.match((await cli(newApiKey())).stdout, /Well formed: an sl_live_ key/);
    assert.match((await cli('0123456789abcdef0123456789abcdef')).stdout, /format before 2026-11-28/);
    await assert.rejects(
      cli('sl_live_typo'),
      (error: { code: number; stderr: string }) => error.code === 1 && /Malformed/.test(error.stderr),
    );
  });
});

describeEachBackend('API keys of both formats', (ctx) => {
  it('takes a new key and a key of the earlier format, and tells a malformed one from a wrong one', async () => {
    const t = await ctx().createTenant();
    assert.match(t.apiKey, /^sl_live_/);
    // A key of the earlier format, stored as such a key was (its hash, its first 8 characters).
    const { hashApiKey } = await import('../../src/businesses/repository.ts');
    const legacy = '0123456789abcdef0123456789abcdef';
    await ctx()
      .db.insertInto('api_keys')
      .values({
        id: `key_legacy_${Date.now()}`,
        business_id: t.businessId,
        prefix: legacy.slice(0, 8),
        key_hash: hashApiKey(legacy),
        created_at: new Date().toISOString(),
      })
      .execute();
    const get = (apiKey: string) =>
      ctx().app.inject({
        method: 'GET',
        url: '/api/v1/items',
        headers: { 'x-business-id': t.businessId, 'x-api-key': apiKey },
      });
    assert.equal((await get(t.apiKey)).statusCode, 200);
    assert.equal((await get(legacy)).statusCode, 200);
    const typo = await get(`${t.apiKey.slice(0, 10)}${t.apiKey[10] === 'a' ? 'b' : 'a'}${t.apiKey.slice(11)}`);
    assert.equal(typo.statusCode, 401);
    assert.match(JSON.parse(typo.body).hint, /malformed/);
    const wrong = await get(newApiKey());
    assert.equal(wrong.statusCode, 401);
    assert.doesNotMatch(JSON.parse(wrong.body).hint, /malformed/);
  });
});
