import assert from 'node:assert/strict';
import type { Tenant, TestContext } from './context.ts';

/**
 * Sends `lines` as an import and waits until it has finished (imports apply in the background), so
 * that a fixture's business holds what the import made before a test looks at it. Answers the import.
 */
export async function importNow(
  ctx: TestContext,
  as: Tenant,
  lines: unknown[],
): Promise<{ id: string; state: string }> {
  const body = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  const posted = await ctx.request('POST', '/api/v1/imports', {
    as,
    body,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  for (let i = 0; i < 1200; i++) {
    const imp = (await ctx.request('GET', `/api/v1/imports/${posted.body.id}`, { as })).body;
    if (imp.state === 'COMPLETED' || imp.state === 'STOPPED') return imp;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`import ${posted.body.id} did not finish within 30 s`);
}
