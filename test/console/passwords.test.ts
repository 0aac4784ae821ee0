import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { it } from 'node:test';
import { promisify } from 'node:util';
import { costOf, hashPassword, verifyPassword } from '../../src/users/password.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

it('hashes with scrypt N=2^17 unless PASSWORD_HASH_COST says otherwise (14 to 20), and verifies a hash of any cost', async () => {
  // The default, in a process without the variable (the test scripts set 14).
  const env = { ...process.env };
  delete env.PASSWORD_HASH_COST;
  const script =
    "import { hashPassword, verifyPassword } from './src/users/password.ts'; const h = await hashPassword('pw'); console.log(h, await verifyPassword('pw', h));";
  const { stdout } = await promisify(execFile)(process.execPath, [...TYPESCRIPT, '--input-type=module', '-e', script], {
    env,
  });
  assert.match(stdout, /^scrypt\$17\$8\$1\$\S+ true$/m);
  // That hash verifies here, whatever this process's cost.
  assert.equal(await verifyPassword('pw', stdout.split(' ')[0]), true);
  assert.equal(await verifyPassword('wrong', stdout.split(' ')[0]), false);

  assert.equal(costOf(undefined), 17);
  assert.equal(costOf('14'), 14);
  assert.equal(costOf('20'), 20);
  for (const bad of ['13', '21', '1e1', '15.5', 'x'])
    assert.throws(() => costOf(bad), /PASSWORD_HASH_COST must be a whole number from 14 to 20/, bad);
  const here = await hashPassword('pw');
  assert.ok(here.startsWith(`scrypt$${costOf(process.env.PASSWORD_HASH_COST)}$8$1$`), here);
});
