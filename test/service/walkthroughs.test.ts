import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { baseEnv, startServer, type Server } from '../reliability/helpers.ts';

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

/** The fenced block of a Markdown file whose info string is `sh walkthrough`. */
export function walkthroughOf(markdown: string): string {
  const match = markdown.match(/^```sh walkthrough\n([\s\S]*?)^```$/m);
  if (!match) throw new Error('no ```sh walkthrough block');
  return match[1];
}

/**
 * The status each curl command should get, by the block's line the command starts on: the last
 * "→ NNN" in the comments just before it. A command in a loop gets it every time it runs.
 */
export function expectedStatuses(block: string): Map<number, number> {
  const expected = new Map<number, number>();
  let pending: number | null = null;
  block.split('\n').forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) {
      const marks = [...trimmed.matchAll(/→ (\d{3})/g)];
      if (marks.length > 0) pending = Number(marks[marks.length - 1][1]);
      return;
    }
    if (/(^|[\s(|])curl\s/.test(trimmed)) {
      if (pending === null) throw new Error(`no "→ status" comment before: ${trimmed}`);
      expected.set(index + 1, pending);
      pending = null;
    }
  });
  return expected;
}

function run(script: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('bash', ['-c', script], {
      cwd: root,
      env: { ...baseEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      const block = walkthroughOf(read(file));
      const expected = expectedStatuses(block);
      assert.ok(expected.size >= 3, `only ${expected.size} commands`);
      // The credentials npm start printed, as the reader exports them; the CLI on the server's database.
      const out = server.output();
      const env = {
        BUSINESS: out.match(/X-Business-Id: (\S+)/)![1],
        KEY: out.match(/X-API-Key: +(\S+)/)![1],
        API: `${server.base}/api/v1`,
        DATABASE_URL: databaseUrl,
      };
      const lines = block.split('\n').map((line) => (/^export (BUSINESS|KEY|API)=/.test(line) ? ':' : line));
      // curl writes its line and status to stderr, so that what the reader's commands capture is unchanged.
      const shim =
        'set -eu -o pipefail; curl() { command curl -w "%{stderr}STATUS $(( BASH_LINENO[0] - 1 )) %{http_code}\\n" "$@"; }\n';
      const result = await run(shim + lines.join('\n'), env);
      const report = `\nstdout:\n${result.stdout.slice(-4000)}\nstderr:\n${result.stderr.slice(-2000)}`;
      assert.equal(result.code, 0, `bash exited ${result.code}${report}`);
      const starts = [...expected.keys()];
      const ran = new Set<number>();
      for (const [, line, status] of result.stderr.matchAll(/^STATUS (\d+) (\d{3})$/gm)) {
        // Bash names a command's first or last line: it belongs to the last curl that starts at or before it.
        const start = starts.filter((s) => s <= Number(line)).pop()!;
        ran.add(start);
        assert.equal(Number(status), expected.get(start), `line ${start}: ${block.split('\n')[start - 1]}${report}`);
      }
      assert.deepEqual(
        starts.filter((s) => !ran.has(s)),
        [],
        `curl commands that never ran${report}`,
      );
    });
  }
});
