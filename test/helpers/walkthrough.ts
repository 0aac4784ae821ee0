import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { baseEnv, type Server } from '../reliability/helpers.ts';

/**
 * Walk-throughs in Markdown (README.md, docs/*.md): their shell blocks, the statuses their comments
 * state, and one runner that checks them against a running server.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The fenced block whose info string is `sh <name>`. */
export function walkthroughOf(markdown: string, name = 'walkthrough'): string {
  const match = markdown.match(new RegExp(`^\`\`\`sh ${name}\\n([\\s\\S]*?)^\`\`\`$`, 'm'));
  if (!match) throw new Error(`no \`\`\`sh ${name} block`);
  return match[1];
}

/**
 * The status each curl command should get, by the block's line the command starts on: the last
 * "→ NNN" in the comments just before it.
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

/** The block's lines inside a loop (`for`, `while`, `until` … `done`), whose commands may run again at once. */
function loopLines(block: string): Set<number> {
  const inLoop = new Set<number>();
  let depth = 0;
  block.split('\n').forEach((line, index) => {
    const opens = (line.match(/(^|[;&|]\s*)(for|while|until)\s/g) ?? []).length;
    if (opens > 0 || depth > 0) inLoop.add(index + 1);
    depth += opens - (line.match(/\bdone\b/g) ?? []).length;
  });
  return inLoop;
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

/**
 * Runs a walk-through as its reader would, with the credentials the server printed at its first
 * start, and checks it: bash exits 0, every curl answers the status its comment states, and the
 * curls run in the block's order, each once (one in a loop may run again at once). Returns what
 * it printed and a report to add to a failed assertion.
 */
export async function runWalkthrough(
  block: string,
  server: Server,
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string; report: string }> {
  const expected = expectedStatuses(block);
  assert.ok(expected.size >= 3, `only ${expected.size} commands`);
  const out = server.output();
  const credentials = {
    BUSINESS: out.match(/X-Business-Id: (\S+)/)![1],
    KEY: out.match(/X-API-Key: +(\S+)/)![1],
    API: `${server.base}/api/v1`,
  };
  const lines = block.split('\n').map((line) => (/^export (BUSINESS|KEY|API)=/.test(line) ? ':' : line));
  // curl writes its line and status to stderr, so that what the reader's commands capture is unchanged.
  const shim =
    'set -eu -o pipefail; curl() { command curl -w "%{stderr}STATUS $(( BASH_LINENO[0] - 1 )) %{http_code}\\n" "$@"; }\n';
  const result = await run(shim + lines.join('\n'), { ...credentials, ...env });
  const report = `\nstdout:\n${result.stdout.slice(-4000)}\nstderr:\n${result.stderr.slice(-2000)}`;
  assert.equal(result.code, 0, `bash exited ${result.code}${report}`);
  const starts = [...expected.keys()];
  const runs: number[] = [];
  for (const [, line, status] of result.stderr.matchAll(/^STATUS (\d+) (\d{3})$/gm)) {
    // Bash names a command's first or last line: it belongs to the last curl that starts at or before it.
    const start = starts.filter((s) => s <= Number(line)).pop()!;
    runs.push(start);
    assert.equal(Number(status), expected.get(start), `line ${start}: ${block.split('\n')[start - 1]}${report}`);
  }
  const repeatable = loopLines(block);
  const once = runs.filter((start, i) => !(repeatable.has(start) && runs[i - 1] === start));
  assert.deepEqual(once, starts, `the curl commands by line, as they ran${report}`);
  return { ...result, report };
}
