import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { findUnstorableText } from '../../src/http/json-body.ts';

it('finds a NUL or lone surrogate at its path', () => {
  assert.equal(findUnstorableText({ a: ['x', { b: 'fine' }], c: 1, d: null }), null);
  assert.deepEqual(findUnstorableText({ a: ['x', { b: 'no\u0000' }] }), {
    path: 'a.1.b',
    problem: 'Must not contain the NUL character (\\u0000)',
  });
  assert.deepEqual(findUnstorableText({ a: { '\ud800': 1 } }), {
    path: 'a',
    problem: 'Keys must be valid Unicode text: a lone UTF-16 surrogate was sent',
  });
  assert.deepEqual(findUnstorableText('\udfff'), {
    path: '(root)',
    problem: 'Must be valid Unicode text: a lone UTF-16 surrogate was sent',
  });
});

it('looks through a value as deep and wide as an import line may be in little memory', async () => {
  // 1,000 arrays deep, then 100,000 strings side by side (under 1 MB of JSON), and a chain 100,000
  // deep; in a thread with 256 MB of heap. Each string waiting on the stack once held a copy of its
  // 1,000-key path: 1.4 GB and 21 s for the wide one.
  const worker = new Worker(
    `
    const { parentPort } = require('node:worker_threads');
    // A thread loads TypeScript as the test process does (test/helpers/typescript.js).
    (process.features.typescript ? Promise.resolve() : import('tsx/esm/api').then((tsx) => tsx.register()))
      .then(() => import(${JSON.stringify(new URL('../../src/http/json-body.ts', import.meta.url).href)}))
      .then(({ findUnstorableText }) => {
      const wide = JSON.parse('['.repeat(1000) + '"x",'.repeat(100000) + '"\\\\u0000"' + ']'.repeat(1000));
      const deep = JSON.parse('['.repeat(100000) + '"\\\\ud800"' + ']'.repeat(100000));
      parentPort.postMessage([findUnstorableText(wide).path, findUnstorableText(deep).path.length]);
    });
    `,
    { eval: true, resourceLimits: { maxOldGenerationSizeMb: 256 } },
  );
  const [widePath, deepPathLength] = await new Promise<[string, number]>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(widePath, `${'0.'.repeat(999)}100000`);
  assert.equal(deepPathLength, '0.'.repeat(99_999).length + 1);
});
