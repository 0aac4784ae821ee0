import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { parseSecretKeys, SecretBox } from '../../src/lib/secret-box.ts';
import { resolveSecretBox } from '../../src/runtime.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

/** Runs `resolveSecretBox` in a process of its own; resolves with its exit code and what it printed. */
function resolveInProcess(databaseUrl: string): Promise<{ code: number | null; out: string }> {
  const script = `import { loadConfig } from './src/config.ts'; import { resolveSecretBox } from './src/runtime.ts';
    const { box } = resolveSecretBox(loadConfig({ DATABASE_URL: ${JSON.stringify(databaseUrl)} })); console.log(box.seal('shared'));`;
  const child = spawn(process.execPath, [...TYPESCRIPT, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

it('several instances starting at once on a fresh data folder all read the one key file that one of them wrote', async () => {
  for (let round = 0; round < 3; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'sl-secret-'));
    try {
      const url = `sqlite:${join(dir, 'db.sqlite')}`;
      const runs = await Promise.all(Array.from({ length: 6 }, () => resolveInProcess(url)));
      for (const run of runs) assert.equal(run.code, 0, run.out);
      const box = new SecretBox(parseSecretKeys(readFileSync(join(dir, 'secret.key'), 'utf8').trim())!);
      for (const run of runs) assert.equal(box.open(run.out.trim()), 'shared', 'every instance uses the same key');
      // And in process, later: the same key again.
      assert.equal(resolveSecretBox(loadConfig({ DATABASE_URL: url })).box.open(runs[0].out.trim()), 'shared');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
