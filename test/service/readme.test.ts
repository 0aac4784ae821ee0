import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { baseEnv, startServer, type Server } from '../reliability/helpers.ts';

/** The fenced block of README.md whose info string is `sh readme-walkthrough`. */
export function walkthroughOf(readme: string): string {
  const match = readme.match(/^```sh readme-walkthrough\n([\s\S]*?)^```$/m);
  if (!match) throw new Error('README.md has no ```sh readme-walkthrough block');
  return match[1];
}

/** The status each curl command should get: the last "→ NNN" in the comments just before it. */
export function expectedStatuses(block: string): number[] {
  const expected: number[] = [];
  let pending: number | null = null;
  for (const line of block.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) {
      const marks = [...trimmed.matchAll(/→ (\d{3})/g)];
      if (marks.length > 0) pending = Number(marks[marks.length - 1][1]);
      continue;
    }
    if (/(^|[\s(|])curl\s/.test(trimmed)) {
      if (pending === null) throw new Error(`README walk-through: no "→ status" comment before: ${trimmed}`);
      expected.push(pending);
      pending = null;
    }
  }
  return expected;
}

function run(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

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
