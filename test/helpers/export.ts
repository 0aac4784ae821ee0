import assert from 'node:assert/strict';
import type { Tenant, TestContext } from './context.ts';

/** A whole export of `path` (orders, items, buyers, invoices): its event sequence and its records. */
export async function exported(ctx: TestContext, t: Tenant, path: string) {
  const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/${path}/export`, headers: t.headers });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /^application\/x-ndjson/);
  const sequence = Number(res.headers['supplyline-event-sequence']);
  assert.ok(Number.isInteger(sequence) && sequence >= 0, String(res.headers['supplyline-event-sequence']));
  const records =
    res.body === ''
      ? []
      : res.body
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line));
  return { sequence, records };
}
