import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Hashes one password in a fresh process with PASSWORD_HASH_COST as given (undefined: unset). */
async function hashWith(cost: string | undefined) {
  const env = { ...process.env };
  delete env.PASSWORD_HASH_COST;
  if (cost !== undefined) env.PASSWORD_HASH_COST = cost;
  const script = "import { hashPassword, verifyPassword } from './src/users/password.ts'; const h = await hashPassword('pw'); console.log(h, await verifyPassword('pw', h));";
  return run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env });
}

it('hashes with scrypt N=2^17 unless PASSWORD_HASH_COST says otherwise (14 to 20), and verifies a hash of any cost', async () => {
  assert.match((await hashWith(undefined)).stdout, /^scrypt\$17\$8\$1\$\S+ true$/m);
  assert.match((await hashWith('14')).stdout, /^scrypt\$14\$8\$1\$\S+ true$/m);
  for (const bad of ['13', '21', '1e1', 'x']) {
    await assert.rejects(hashWith(bad), (error: { stderr: string }) => /PASSWORD_HASH_COST must be a whole number from 14 to 20/.test(error.stderr), bad);
  }
  // A hash made at another cost (the test scripts' 14) still verifies in a process of the default cost.
  const { verifyPassword, hashPassword } = await import('../../src/users/password.ts');
  const other = (await hashWith('15')).stdout.split(' ')[0];
  assert.equal(await verifyPassword('pw', other), true);
  assert.equal(await verifyPassword('wrong', await hashPassword('pw')), false);
});
