import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer, type Server } from '../reliability/helpers.ts';
import { expectedStatuses, runScript as run, walkthroughOf } from '../helpers/walkthrough.ts';

describe('README.md: the first-hour walk-through', () => {
  let dir: string;
  let server: Server;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'supplyline-readme-'));
    server = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'readme.db')}` });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs in order against a fresh server, every command answering the status its comment states', async () => {
    const block = walkthroughOf(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'));
    const expected = expectedStatuses(block);
    assert.ok(expected.length >= 20, `only ${expected.length} commands`);
    // The printed credentials, as the reader exports them.
    const out = server.output();
    const env = {
      BUSINESS: out.match(/X-Business-Id: (\S+)/)![1],
      KEY: out.match(/X-API-Key: +(\S+)/)![1],
      API: `${server.base}/api/v1`,
    };
    const lines = block.split('\n').filter((line) => !/^export (BUSINESS|KEY|API)=/.test(line));
    assert.equal(block.split('\n').length - lines.length, 3, 'the block exports BUSINESS, KEY and API');
    // curl writes each status to stderr, so that what the reader's commands capture is unchanged.
    const shim = `set -eu -o pipefail\ncurl() { command curl -w '%{stderr}STATUS %{http_code}\\n' "$@"; }\n`;
    const result = await run(shim + lines.join('\n'), env);
    const statuses = [...result.stderr.matchAll(/^STATUS (\d{3})$/gm)].map((m) => Number(m[1]));
    const report = `\nstdout:\n${result.stdout.slice(-4000)}\nstderr:\n${result.stderr.slice(-2000)}`;
    assert.equal(result.code, 0, `bash exited ${result.code}${report}`);
    assert.deepEqual(statuses, expected, report);
  });
});
