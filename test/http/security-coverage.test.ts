import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * Every operation of the API has the shared security cases (test/helpers/security.ts): no key,
 * a wrong key, a revoked key, another tenant's resource. Test files run in processes of their own,
 * so the cases cannot report what they covered; this reads the test files instead: each
 * `securityCases(ctx, { method, url })` names a method and a URL template (`/api/v1/items/${...}`),
 * and every operation in /openapi.json must be matched by one.
 */
/** The test folders (each resource's, and the others'), not the reliability suite's. */
const TEST_DIR = join(import.meta.dirname, '..');
const testFiles = () =>
  readdirSync(TEST_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !['helpers', 'fixtures', 'reliability'].includes(entry.name))
    .flatMap((entry) =>
      readdirSync(join(TEST_DIR, entry.name))
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => join(entry.name, f)),
    );

function declaredCases(): Array<{ method: string; url: RegExp; source: string }> {
  const cases: Array<{ method: string; url: RegExp; source: string }> = [];
  for (const file of testFiles()) {
    const text = readFileSync(join(TEST_DIR, file), 'utf8');
    for (const match of text.matchAll(/securityCases\(ctx, \{([\s\S]*?)\}\);\n/g)) {
      const method = /method: '([A-Z]+)'/.exec(match[1])?.[1];
      const url = /[`'](\/api\/v1\/[^`']*)[`']/.exec(match[1])?.[1];
      if (!method || !url) continue;
      // `${anything}` in the template stands for one path segment.
      const pattern = url
        .split(/\$\{[\s\S]*?\}(?=\/|$)/)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]+');
      cases.push({ method, url: new RegExp(`^${pattern}$`), source: `${file}: ${method} ${url}` });
    }
  }
  return cases;
}

describeEachBackend('the shared security cases', (ctx) => {
  it('cover every operation of the API', async () => {
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    const cases = declaredCases();
    assert.ok(cases.length > 20, `${cases.length} cases found`);
    const missing: string[] = [];
    for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
      if (!path.startsWith('/api/v1/')) continue;
      for (const method of Object.keys(operations)) {
        const example = path.replace(/\{[^}]+\}/g, 'x_1');
        if (!cases.some((c) => c.method === method.toUpperCase() && c.url.test(example)))
          missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });
});
