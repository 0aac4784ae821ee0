import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer, type Server } from '../reliability/helpers.ts';
import { runWalkthrough, walkthroughOf } from '../helpers/walkthrough.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The guides in docs/, each linked once from the README. */
export const GUIDES = [
  'docs/integration-guide.md',
  'docs/webhooks.md',
  'docs/keys-and-scopes.md',
  'docs/imports.md',
  'docs/client.md',
  'docs/console.md',
  'docs/fulfilment.md',
  'docs/sandboxes.md',
  'docs/operations.md',
  'docs/development.md',
];

/** The files whose ```sh walkthrough block runs against a fresh server, in this order. */
export const WALKTHROUGHS = [
  'README.md',
  'docs/integration-guide.md',
  'docs/webhooks.md',
  'docs/keys-and-scopes.md',
  'docs/imports.md',
  'docs/sandboxes.md',
];

describe('the guides: one README, each guide linked once', () => {
  it('links every guide from the README exactly once, and every local link of the README and the guides leads to a file', () => {
    const readme = read('README.md');
    for (const guide of GUIDES) {
      const links = readme.match(new RegExp(`\\]\\(${guide.replace('.', '\\.')}\\)`, 'g')) ?? [];
      assert.equal(links.length, 1, `README.md links ${guide} ${links.length} times`);
    }
    for (const file of ['README.md', ...GUIDES]) {
      for (const [, target] of read(file).matchAll(/\]\(([^)#\s]+)(#[^)\s]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        assert.ok(existsSync(join(root, dirname(file), target)), `${file} links ${target}, which is missing`);
      }
    }
  });
});

describe('the walk-throughs of the README and the guides', () => {
  let dir: string;
  let server: Server;
  let databaseUrl: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'supplyline-walkthroughs-'));
    databaseUrl = `sqlite:${join(dir, 'walkthroughs.db')}`;
    server = await startServer({ DATABASE_URL: databaseUrl, WEBHOOK_WORKERS: 'off' });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const file of WALKTHROUGHS) {
    it(`${file}: runs in order against the server, every curl answering the status its comment states`, {
      timeout: 120_000,
    }, async () => {
      // The CLI in a guide works on the server's database.
      await runWalkthrough(walkthroughOf(read(file)), server, { DATABASE_URL: databaseUrl });
    });
  }
});
