import { spawn } from 'node:child_process';
import { baseEnv } from '../reliability/helpers.ts';

/**
 * Walk-throughs in Markdown (README.md, docs/*.md): their shell blocks, the statuses their comments
 * state, and a runner. `walkthroughOf` gives the fenced block whose info string is `sh <name>`.
 */
export function walkthroughOf(text: string, name = 'readme-walkthrough'): string {
  const match = text.match(new RegExp(`^\`\`\`sh ${name}\\n([\\s\\S]*?)^\`\`\`$`, 'm'));
  if (!match) throw new Error(`No \`\`\`sh ${name} block`);
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

export function runScript(
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
