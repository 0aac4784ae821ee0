import assert from 'node:assert/strict';
import type { Tenant, TestContext } from './context.ts';

/** An item create line with one variant, as an import file holds it. */
export const itemLine = (name: string, ref: string) => ({
  op: 'create',
  resource: 'item',
  ref,
  data: { item: { name }, variants: [{ variantName: 'One', currency: 'AUD', price: 1, cost: 1 }] },
});

/** A buyer create line. */
export const buyerLine = (name: string, ref: string) => ({
  op: 'create',
  resource: 'buyer',
  ref,
  data: { buyer: { name } },
});

/** Sends `lines` as an import (202): its id. */
export async function postImport(ctx: TestContext, as: Tenant, lines: unknown[]): Promise<string> {
  const body = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  const posted = await ctx.request('POST', '/api/v1/imports', {
    as,
    body,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  return posted.body.id;
}

/**
 * Sends `lines` as an import and waits until it has finished (imports apply in the background), so
 * that a fixture's business holds what the import made before a test looks at it. Answers the import.
 */
export async function importNow(
  ctx: TestContext,
  as: Tenant,
  lines: unknown[],
): Promise<{ id: string; state: string }> {
  const id = await postImport(ctx, as, lines);
  for (let i = 0; i < 1200; i++) {
    const imp = (await ctx.request('GET', `/api/v1/imports/${id}`, { as })).body;
    if (imp.state === 'COMPLETED' || imp.state === 'STOPPED') return imp;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`import ${id} did not finish within 30 s`);
}
