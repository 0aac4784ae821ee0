import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';

const { NODE_TEST_CONTEXT: _ignored, ...baseEnv } = process.env;

/**
 * A console session for the business: a viewer made with `cli user create` (dist/cli.js), signed
 * in through the sign-in form. Returns the requests of the console's orders page (server-side
 * rendering of the first page, and of a filtered one), carrying its cookie.
 */
export async function consoleRequests(
  base: string,
  databaseUrl: string,
  businessId: string,
): Promise<autocannon.Request[]> {
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const out = execFileSync(
    process.execPath,
    [
      'dist/cli.js',
      'user',
      'create',
      '--business',
      businessId,
      '--email',
      email,
      '--name',
      'Bench',
      '--role',
      'viewer',
      '--json',
    ],
    {
      env: { ...baseEnv, DATABASE_URL: databaseUrl },
      encoding: 'utf8',
    },
  );
  const { password } = JSON.parse(out.trim().split('\n').at(-1)!);
  const res = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password }).toString(),
  });
  const cookie = res.headers.get('set-cookie')?.split(';')[0];
  if (res.status !== 303 || !cookie) throw new Error(`console sign-in failed: ${res.status}`);
  return [
    { method: 'GET', path: '/console/orders', headers: { cookie } },
    { method: 'GET', path: '/console/orders?phase=ACTIVE&status=ACCEPTED&page=3', headers: { cookie } },
  ];
}
