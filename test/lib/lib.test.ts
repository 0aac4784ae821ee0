import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { applyHeapGrowth } from '../../src/runtime.ts';
import { newId } from '../../src/lib/ids.ts';
import { canonicalJson, checkProperties, deepMerge } from '../../src/lib/json.ts';
import { Decimal } from 'decimal.js';
import { formatAmount, multiply, sum, toDecimalString } from '../../src/lib/money.ts';
import { toIso } from '../../src/lib/time.ts';
import { Type } from 'typebox';
import { compileBody, toFieldErrors } from '../../src/lib/validation.ts';

describe('deepMerge', () => {
  it('merges as the contract example says', () => {
    const stored = { unleashed: { guid: '123' } };
    const once = deepMerge(stored, { sage200Evo: { salesOrderNo: 456 } });
    assert.deepEqual(once, { unleashed: { guid: '123' }, sage200Evo: { salesOrderNo: 456 } });
    assert.deepEqual(deepMerge(once, { sage200Evo: { invoiceNo: 'I1' } }), {
      unleashed: { guid: '123' },
      sage200Evo: { salesOrderNo: 456, invoiceNo: 'I1' },
    });
  });

  it('stores null as a value, and replaces arrays and scalars', () => {
    assert.deepEqual(deepMerge({ a: { b: 1 }, c: [1, 2] }, { a: null, c: [3] }), { a: null, c: [3] });
    assert.deepEqual(deepMerge(null, { a: null }), { a: null });
  });

  it('keeps every key of both sides, patch winning at the leaves (property)', () => {
    fc.assert(
      fc.property(fc.object(), fc.object(), (a, b) => {
        const merged = deepMerge(a, b);
        for (const k of Object.keys(b)) assert.ok(k in merged);
        for (const k of Object.keys(a)) assert.ok(k in merged);
        assert.deepEqual(deepMerge(merged, b), merged, 'merging the same patch twice changes nothing');
      }),
    );
  });
});

describe('checkProperties', () => {
  it('accepts ordinary objects and rejects depth, size and forbidden keys', () => {
    assert.equal(checkProperties({ a: { b: [1, { c: null }] } }), null);
    let deep: unknown = 1;
    for (let i = 0; i < 32; i++) deep = { n: deep };
    assert.equal(checkProperties(deep), null, '32 levels are allowed');
    assert.match(checkProperties({ n: deep }) ?? '', /32 levels/);
    assert.match(checkProperties({ a: { constructor: 1 } }) ?? '', /constructor/);
    assert.match(checkProperties({ big: 'x'.repeat(70_000) }) ?? '', /bytes/);
  });

  it('checks depth without recursion, so hostile nesting cannot overflow the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.match(checkProperties({ a: deep }) ?? '', /levels deep/);
  });
});

describe('canonicalJson', () => {
  it('ignores key order', () => {
    fc.assert(
      fc.property(fc.object(), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        assert.equal(canonicalJson(reversed), canonicalJson(o));
      }),
    );
  });
});

describe('money', () => {
  it('is exact decimal arithmetic', () => {
    assert.equal(sum([multiply('0.1', 3), '9.9']), '10.2');
    assert.equal(toDecimalString(0.1), '0.1');
    assert.equal(formatAmount('12.5'), '12.50');
    assert.equal(formatAmount('1.005'), '1.005');
  });

  it('formats any decimal text as decimal.js would, two places at least (property)', () => {
    const reference = (text: string) => {
      const d = new Decimal(text);
      return d.decimalPlaces() < 2 ? d.toFixed(2) : d.toFixed();
    };
    const decimalText = fc
      .tuple(
        fc.constantFrom('', '-'),
        fc.stringMatching(/^\d{1,12}$/),
        fc.option(fc.stringMatching(/^\d{0,8}$/)),
        fc.option(fc.integer({ min: -30, max: 30 })),
      )
      .map(
        ([sign, whole, fraction, exponent]) =>
          `${sign}${whole}${fraction === null ? '' : `.${fraction}`}${exponent === null ? '' : `e${exponent}`}`,
      )
      .filter((t) => !/\.(e|$)/.test(t));
    fc.assert(
      fc.property(decimalText, (text) => assert.equal(formatAmount(text), reference(text), text)),
      { numRuns: 2000 },
    );
    for (const text of ['0', '-0', '0.5', '-0.5', '12', '12.5', '12.50', '012.5', '1.005', '100', '1e3', '1.50e1']) {
      assert.equal(formatAmount(text), reference(text), text);
    }
  });

  it('sums integers like integers (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1e9, max: 1e9 })), (xs) => {
        assert.equal(sum(xs), String(xs.reduce((a, b) => a + b, 0)));
      }),
    );
  });
});

describe('toIso', () => {
  it('gives toISOString() of any stored form: text from SQLite, Date from PostgreSQL (property)', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('0001-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59.999Z'),
          noInvalidDate: true,
        }),
        (date) => {
          const expected = date.toISOString();
          assert.equal(toIso(date), expected);
          assert.equal(toIso(expected), expected);
          assert.equal(toIso(expected.replace('Z', '+00:00')), expected);
        },
      ),
      { numRuns: 2000 },
    );
    assert.equal(toIso('2026-11-22 10:00:00+02'), '2026-11-22T08:00:00.000Z');
    assert.equal(toIso(null), null);
  });

  it('reads a timestamp as PostgreSQL writes it into JSON in UTC: trailing zeros dropped, microseconds truncated (property)', () => {
    const dates = fc.date({
      min: new Date('0001-01-01T00:00:00Z'),
      max: new Date('9999-12-31T23:59:59.999Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(dates, fc.integer({ min: 0, max: 999 }), (date, micros) => {
        const expected = date.toISOString();
        // json_build_array(timestamptz) with TimeZone UTC: "2026-01-01T00:00:00.1+00:00", "…:00+00:00", "…:00.123456+00:00".
        const digits = `${expected.slice(20, 23)}${String(micros).padStart(3, '0')}`.replace(/0+$/, '');
        const written = `${expected.slice(0, 19)}${digits ? `.${digits}` : ''}+00:00`;
        assert.equal(toIso(written), expected, written);
      }),
      { numRuns: 2000 },
    );
    assert.equal(toIso('2026-11-25T23:15:12.513637+00:00'), '2026-11-25T23:15:12.513Z');
    assert.equal(toIso('2026-11-25T23:15:12+01:00'), '2026-11-25T22:15:12.000Z');
  });
});

describe('ids', () => {
  it('have the prefix and sort by creation, even within one millisecond', () => {
    const ids = Array.from({ length: 1000 }, () => newId('ord', 1_700_000_000_000));
    assert.ok(ids.every((id) => /^ord_[0-9a-z]{26}$/.test(id)));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(newId('ord', 1_700_000_000_001) > ids[999]);
  });

  it('draw fresh random bits in each new millisecond, across refills of the random pool', () => {
    // 1,000 milliseconds: the 4 kB pool gives 256 ids, so this crosses three refills.
    const randomParts = Array.from({ length: 1000 }, (_, i) => newId('evt', 1_800_000_000_000 + i).slice(14));
    assert.equal(new Set(randomParts).size, randomParts.length);
    // Each of the 16 characters takes many values: the bits are random, not a counter's.
    for (let c = 0; c < 16; c++) assert.ok(new Set(randomParts.map((r) => r[c])).size > 20, `character ${c}`);
  });
});

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 3000);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.databaseUrl, 'sqlite:./data/supplyline.db');
    assert.equal(c.redisUrl, null);
    assert.equal(c.rateLimitRps, 50);
    assert.equal(c.rateLimitBurst, 100);
    assert.equal(c.idempotencyTtlHours, 24);
    assert.equal(c.bodyLimitBytes, 1024 * 1024);
    assert.equal(c.responseCacheMb, 32);
    assert.equal(c.heapGrowingPercent, 50);
    assert.equal(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent, 0);
    assert.equal(c.pgPreparedStatements, true);
    assert.equal(loadConfig({ PG_PREPARED_STATEMENTS: 'off' }).pgPreparedStatements, false);
    assert.equal(c.migrationLockWaitMs, 60_000);
    assert.equal(loadConfig({ MIGRATION_LOCK_WAIT_SECONDS: '5' }).migrationLockWaitMs, 5000);
    const [pooled, direct, listen] = ['postgres://h:6432/d', 'postgres://h:5432/d', 'postgres://l:5432/d'];
    assert.equal(loadConfig({ DATABASE_URL: pooled }).listenDatabaseUrl, pooled);
    assert.equal(loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct }).listenDatabaseUrl, direct);
    assert.equal(
      loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, LISTEN_DATABASE_URL: listen }).listenDatabaseUrl,
      listen,
    );
    assert.deepEqual(c.databaseReplicaUrls, []);
    assert.deepEqual(
      loadConfig({ DATABASE_URL: direct, DATABASE_REPLICA_URLS: ' postgres://r1:5432/d, postgres://r2:5432/d ,' })
        .databaseReplicaUrls,
      ['postgres://r1:5432/d', 'postgres://r2:5432/d'],
    );
    assert.ok(Object.isFrozen(c));
  });

  it('rejects bad values with a message naming the variable', () => {
    const bad: Array<Record<string, string>> = [
      { PORT: 'abc' },
      { PORT: '70000' },
      { RATE_LIMIT_RPS: '-1' },
      { RATE_LIMIT_BURST: '0' },
      { DATABASE_URL: 'mysql://x' },
      { LOG_LEVEL: 'loud' },
      { REDIS_URL: 'http://x' },
      { IDEMPOTENCY_TTL_HOURS: '0' },
      { BODY_LIMIT_BYTES: '1.5' },
      { RESPONSE_CACHE_MB: '-1' },
      { PG_PREPARED_STATEMENTS: 'maybe' },
      { HEAP_GROWING_PERCENT: '-5' },
      { HEAP_GROWING_PERCENT: '2000' },
      { MIGRATION_LOCK_WAIT_SECONDS: '0' },
      { DATABASE_DIRECT_URL: 'sqlite:./x.db' },
      { DATABASE_REPLICA_URLS: 'postgres://r:5432/d' },
      { DATABASE_REPLICA_URLS: 'postgres://r:5432/d,mysql://r/d', DATABASE_URL: 'postgres://p:5432/d' },
    ];
    for (const env of bad) {
      const name = Object.keys(env)[0];
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.message.startsWith(name),
        name,
      );
    }
  });
});

describe('applyHeapGrowth', () => {
  it("sets V8's heap growing percent, and leaves V8 its own factor at 0", () => {
    const set: string[] = [];
    applyHeapGrowth(100, (flags) => set.push(flags));
    applyHeapGrowth(0, (flags) => set.push(flags));
    assert.deepEqual(set, ['--heap-growing-percent=100']);
  });

  it("is a flag this Node's V8 knows", async () => {
    const { execFileSync } = await import('node:child_process');
    const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    assert.match(options, /--heap-growing-percent\b/);
  });
});

describe('jsonEqual (the event diff)', () => {
  it('answers as isDeepStrictEqual does for any JSON value (property)', async () => {
    const { isDeepStrictEqual } = await import('node:util');
    const { jsonEqual } = await import('../../src/log/changes.ts');
    // -0 is left out: JSON writes it as 0, so the diff counts it equal where isDeepStrictEqual does not.
    const value = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    fc.assert(fc.property(value, value, (a, b) => jsonEqual(a, b) === isDeepStrictEqual(a, b)));
    // Equal values reached by different routes: key order, copies.
    fc.assert(fc.property(value, (a) => jsonEqual(a, JSON.parse(JSON.stringify(a)))));
    assert.equal(jsonEqual({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 }), true);
    assert.equal(jsonEqual({ a: null }, {}), false);
    assert.equal(jsonEqual([], {}), false);
    assert.equal(jsonEqual({ 0: 'x' }, ['x']), false);
    assert.equal(jsonEqual('1', 1), false);
  });
});

describe('event data encoding (one reused deflate stream)', () => {
  it('gives a stream of its own that inflates to the JSON, for any JSON value and for texts larger than its first buffer', async () => {
    const { encodeData, decodeData } = await import('../../src/log/codec.ts');
    const { inflateRawSync } = await import('node:zlib');
    const same = (value: unknown) => {
      const encoded = encodeData(value);
      // A fresh inflater: nothing of the texts deflated before is needed to read it.
      assert.equal(inflateRawSync(encoded).toString(), JSON.stringify(value));
      assert.deepEqual(decodeData(encoded), JSON.parse(JSON.stringify(value)));
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => same(value)),
      { numRuns: 300 },
    );
    // After these texts, Node's zlib gives other bytes than deflateRawSync's for the last one (the
    // reset stream's leftover window steers its choice of matches): still a stream of its own.
    for (const text of [
      '{"IG003y{|H":[-1.6157678730243723e-88,":(c (T7i",true,"xM$",null]}',
      '-1.698946295859956e-295',
    ])
      same(JSON.parse(text));
    // Incompressible text past the 64 kB output buffer, then a small one after it on the same stream.
    same({
      object: {
        id: 'x',
        text: Array.from({ length: 30_000 }, (_, i) => ((i * 2654435761) >>> 0).toString(36)).join(''),
      },
    });
    same({ object: { id: 'small' } });
  });
});

describe("diffResource (an update event's data.changes)", () => {
  it('tells a path that came or went from one that held null, and never records a change that is none', async () => {
    const { diffResource } = await import('../../src/log/changes.ts');
    const base = { id: 'x', name: 'a', properties: null as unknown, buyerInfo: null as unknown };
    assert.deepEqual(diffResource(base, { ...base, properties: { erp: { no: 1 } } }), {
      properties: { from: null },
      'properties.erp.no': { to: 1 },
    });
    assert.deepEqual(
      diffResource({ ...base, buyerInfo: { notes: null } }, { ...base, buyerInfo: { notes: null, vip: true } }),
      { 'buyerInfo.vip': { to: true } },
    );
    assert.deepEqual(diffResource({ ...base, properties: { a: 1 } }, { ...base, properties: { a: null } }), {
      'properties.a': { from: 1, to: null },
    });
    assert.deepEqual(diffResource({ ...base, properties: { a: 1, b: 2 } }, { ...base, properties: { a: 1 } }), {
      'properties.b': { from: 2 },
    });
    assert.deepEqual(diffResource(base, { ...base, name: 'b' }), { name: { from: 'a', to: 'b' } });
    assert.deepEqual(diffResource(base, { ...base }), {});
    fc.assert(
      fc.property(
        fc.option(fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }))),
        fc.option(fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }))),
        (before, after) => {
          const changes = diffResource({ ...base, properties: before }, { ...base, properties: after }) as Record<
            string,
            { from?: unknown; to?: unknown }
          >;
          for (const [path, change] of Object.entries(changes)) {
            assert.ok('from' in change || 'to' in change, path);
            assert.notDeepEqual(change.from, change.to, `${path}: ${JSON.stringify(change)}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('toFieldErrors', () => {
  const check = compileBody(
    Type.Object({
      weight: Type.Union([Type.Null(), Type.Object({ value: Type.Number({ exclusiveMinimum: 0 }) })]),
      note: Type.Union([Type.Null(), Type.String()]),
    }),
  );
  const errorsOf = (body: unknown) => {
    assert.equal(check(body), false);
    return toFieldErrors(check.errors ?? [], body);
  };

  it('names what is wrong within a nullable object, and not that it is not null', () => {
    assert.deepEqual(Object.keys(errorsOf({ weight: { value: -1 }, note: null })), ['weight.value']);
  });

  it('still says what a nullable field of the wrong type should be', () => {
    const errors = errorsOf({ weight: null, note: 5 });
    assert.deepEqual(Object.keys(errors), ['note']);
  });
});
