import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { findActiveKeys, findBusiness, hashApiKey } from '../../src/businesses/repository.ts';
import { openBusiness } from '../../src/businesses/service.ts';
import { createWriteRunner } from '../../src/write/runner.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { findUserByEmail } from '../../src/users/repository.ts';
import { verifyPassword } from '../../src/users/password.ts';
import { backends } from '../helpers/context.ts';
import { bundledCli, type CliResult as Result, createDatabaseUrl, root } from '../helpers/cli.ts';

const runCli = bundledCli('cli');

function assertNoStack(result: Result): void {
  assert.doesNotMatch(result.stderr, /^\s+at /m, 'expected errors are reported without a stack trace');
}

describe('CLI arguments', () => {
  const url = `sqlite:${join(tmpdir(), 'supplyline-cli-never-opened.db')}`;

  it('prints usage for help, --help and no arguments, from the bin in any directory', async () => {
    const [help, bare, bin] = await Promise.all([
      runCli(['help'], url),
      runCli([], url),
      runCli(['--help'], url, { bin: { cwd: tmpdir() } }),
    ]);
    for (const result of [help, bare, bin]) {
      assert.equal(result.code, 0, result.stderr);
      for (const command of ['business create', 'key create', 'key list', 'key revoke', 'migrate']) {
        assert.match(result.stdout, new RegExp(command));
      }
    }
  });

  it('rejects unknown commands, unknown flags and missing values with exit code 2', async () => {
    const results = await Promise.all([
      runCli(['frobnicate'], url),
      runCli(['business', 'create', '--name', 'A', '--bogus'], url),
      runCli(['business', 'create'], url),
      runCli(['key', 'list', '--business'], url),
    ]);
    for (const result of results) {
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^Error: .+\nRun 'supplyline help' for usage\./);
      assert.equal(result.stdout, '');
      assertNoStack(result);
    }
    assert.match(results[0].stderr, /Unknown command 'frobnicate'/);
    assert.match(results[1].stderr, /--bogus/);
    assert.match(results[2].stderr, /needs --name/);
  });

  it("lists a noun's commands for `key --help`, and says `key` alone needs one (exit 2)", async () => {
    const [asked, bare, user] = await Promise.all([
      runCli(['key', '--help'], url),
      runCli(['key'], url),
      runCli(['user', '-h'], url),
    ]);
    assert.equal(asked.code, 0, asked.stderr);
    for (const command of ['key create', 'key list', 'key allow', 'key check', 'key revoke'])
      assert.match(asked.stdout, new RegExp(`^  ${command} `, 'm'));
    assert.doesNotMatch(asked.stdout, /business create/);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /^Error: 'key' needs a command:\n {2}key create /);
    assert.equal(user.code, 0, user.stderr);
    assert.match(user.stdout, /^ {2}user disable /m);
  });

  it('refuses a SQLite path with no database for a command that acts on one, and makes none there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-cli-typo-'));
    try {
      const typo = `sqlite:${join(dir, 'mistyped', 'supplyine.db')}`;
      // Wrong usage is said first, whatever the database.
      const role = await runCli(
        ['user', 'create', '--business', 'bus_x', '--email', 'a@example.com', '--name', 'A', '--role', 'king'],
        typo,
      );
      assert.equal(role.code, 2, role.stderr);
      assert.match(role.stderr, /--role must be one of owner, admin, viewer/);
      const revoke = await runCli(['key', 'revoke', '--key-id', 'key_01m96spsw7czmffv28zpgs9mbf'], typo);
      assert.equal(revoke.code, 1);
      assert.match(revoke.stderr, /^Error: No database at .*mistyped\/supplyine\.db \(DATABASE_URL\): check the path/);
      assertNoStack(revoke);
      assert.equal(existsSync(join(dir, 'mistyped')), false, 'nothing was made at the mistyped path');
      // migrate (and business create, demo) make it, as on a first run.
      assert.equal((await runCli(['migrate'], typo)).code, 0);
      assert.equal(existsSync(join(dir, 'mistyped', 'supplyine.db')), true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a bad DATABASE_URL with exit code 1', async () => {
    const result = await runCli(['migrate'], 'mysql://localhost/x');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /DATABASE_URL must be sqlite:PATH or postgres:/);
    assertNoStack(result);
  });
});

for (const backend of backends) {
  describe(`[${backend}] CLI`, () => {
    let database: { url: string; drop(): Promise<void> };
    before(async () => {
      database = await createDatabaseUrl(backend);
    });
    after(async () => {
      await database?.drop();
    });

    it('migrate applies the migrations once, then says the database is up to date', async () => {
      const first = await runCli(['migrate'], database.url);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /0001-foundation/);
      const second = await runCli(['migrate'], database.url);
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /Database is up to date/);
      assert.doesNotMatch(second.stdout, /0001-foundation/);
    });

    it('business create --json prints one line whose key is stored as a working key', async () => {
      const result = await runCli(['business', 'create', '--name', 'Acme Wholesale', '--json'], database.url);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^\{[^\n]*\}\n$/);
      const created = JSON.parse(result.stdout);
      assert.deepEqual(Object.keys(created), ['businessId', 'apiKey']);
      assert.match(created.businessId, /^bus_/);

      const handle = createDatabase(database.url);
      try {
        assert.equal((await findBusiness(handle.db, created.businessId))?.name, 'Acme Wholesale');
        const keys = await findActiveKeys(handle.db, created.businessId);
        assert.deepEqual(
          keys.map((k) => k.key_hash),
          [hashApiKey(created.apiKey)],
        );
      } finally {
        await handle.close();
      }
    });

    it('key create, list and revoke round-trip', async () => {
      // Created in-process: the CLI's own business create is covered above, and each run costs a second.
      const handle = createDatabase(database.url);
      const business = await openBusiness(createWriteRunner(handle.db), 'Keys Ltd').finally(() => handle.close());
      const createdKey = await runCli(['key', 'create', '--business', business.businessId, '--json'], database.url);
      assert.equal(createdKey.code, 0, createdKey.stderr);
      const key = JSON.parse(createdKey.stdout);
      assert.equal(key.businessId, business.businessId);
      assert.match(key.keyId, /^key_/);
      assert.notEqual(key.apiKey, business.apiKey);

      const revoked = await runCli(['key', 'revoke', '--key-id', key.keyId], database.url);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.match(revoked.stdout, /every instance within 5 seconds/);

      const [listed, table] = await Promise.all([
        runCli(['key', 'list', '--business', business.businessId, '--json'], database.url),
        runCli(['key', 'list', '--business', business.businessId], database.url),
      ]);
      assert.equal(listed.code, 0, listed.stderr);
      const keys = JSON.parse(listed.stdout);
      assert.equal(keys.length, 2);
      type ListedKey = { id: string; prefix: string; revokedAt: string | null };
      const revokedKey = keys.find((k: ListedKey) => k.id === key.keyId) as ListedKey;
      const firstKey = keys.find((k: ListedKey) => k.id !== key.keyId) as ListedKey;
      assert.match(revokedKey.revokedAt ?? '', /^\d{4}-\d\d-\d\dT/);
      assert.equal(revokedKey.prefix, key.apiKey.slice(0, 12));
      assert.equal(firstKey.revokedAt, null);

      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^ID\s+PREFIX\s+SCOPES\s+ALLOWED FROM\s+CREATED\s+LAST USED\s+EXPIRES\s+REVOKED/);
      assert.match(
        table.stdout,
        new RegExp(`${key.keyId}\\s+${key.apiKey.slice(0, 12)}\\s+all\\s+anywhere\\s+\\S+\\s+-\\s+-\\s+\\d{4}-`),
      );
      assert.doesNotMatch(table.stdout, new RegExp(key.apiKey), 'the list never shows a key');

      // A key limited to some scopes says so, in the list too; an unknown scope is a usage error.
      const scoped = await runCli(
        ['key', 'create', '--business', business.businessId, '--scopes', 'orders:write,items:read', '--json'],
        database.url,
      );
      assert.equal(scoped.code, 0, scoped.stderr);
      assert.deepEqual(JSON.parse(scoped.stdout).scopes, ['orders:write', 'items:read']);
      const scopedList = JSON.parse(
        (await runCli(['key', 'list', '--business', business.businessId, '--json'], database.url)).stdout,
      );
      assert.deepEqual(scopedList.find((k: { id: string }) => k.id === JSON.parse(scoped.stdout).keyId).scopes, [
        'orders:write',
        'items:read',
      ]);
      const unknown = await runCli(
        ['key', 'create', '--business', business.businessId, '--scopes', 'orders:admin'],
        database.url,
      );
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /Unknown scope orders:admin/);

      // Where from: --allow at creation, key allow afterwards, and a bad CIDR is a usage error.
      const fenced = await runCli(
        ['key', 'create', '--business', business.businessId, '--allow', '203.0.113.0/24, 2001:DB8::/32', '--json'],
        database.url,
      );
      assert.equal(fenced.code, 0, fenced.stderr);
      const fencedKey = JSON.parse(fenced.stdout);
      assert.deepEqual(fencedKey.allowedCidrs, ['203.0.113.0/24', '2001:db8::/32']);
      const moved = await runCli(
        ['key', 'allow', '--key-id', fencedKey.keyId, '--cidrs', '198.51.100.7'],
        database.url,
      );
      assert.equal(moved.code, 0, moved.stderr);
      assert.match(moved.stdout, /may be used from 198\.51\.100\.7\/32/);
      const fencedList = JSON.parse(
        (await runCli(['key', 'list', '--business', business.businessId, '--json'], database.url)).stdout,
      );
      assert.deepEqual(fencedList.find((k: { id: string }) => k.id === fencedKey.keyId).allowedCidrs, [
        '198.51.100.7/32',
      ]);
      const badCidr = await runCli(
        ['key', 'allow', '--key-id', fencedKey.keyId, '--cidrs', '10.0.0.0/33'],
        database.url,
      );
      assert.equal(badCidr.code, 2);
      assert.match(badCidr.stderr, /Not an IPv4 or IPv6 address or CIDR: 10\.0\.0\.0\/33/);
      const anywhere = await runCli(['key', 'allow', '--key-id', fencedKey.keyId, '--anywhere'], database.url);
      assert.match(anywhere.stdout, /may be used from anywhere/);
    });

    it('user create prints a password once that signs in, user list shows the user, user disable ends it', async () => {
      const handle = createDatabase(database.url);
      const business = await openBusiness(createWriteRunner(handle.db), 'Users Ltd').finally(() => handle.close());
      const email = `ana-${randomBytes(3).toString('hex')}@example.com`;
      const created = await runCli(
        [
          'user',
          'create',
          '--business',
          business.businessId,
          '--email',
          email,
          '--name',
          'Ana',
          '--role',
          'admin',
          '--json',
        ],
        database.url,
      );
      assert.equal(created.code, 0, created.stderr);
      const user = JSON.parse(created.stdout.trim());
      assert.equal(user.email, email);
      assert.equal(user.role, 'admin');
      assert.match(user.password, /^[A-Za-z0-9_-]{20}$/);
      const check = createDatabase(database.url);
      try {
        const row = await findUserByEmail(check.db, email);
        assert.ok(row);
        assert.ok(
          row.password_hash.startsWith(`scrypt$${process.env.PASSWORD_HASH_COST ?? 17}$8$1$`) &&
            !row.password_hash.includes(user.password),
        );
        assert.ok(await verifyPassword(user.password, row.password_hash));
      } finally {
        await check.close();
      }
      const again = await runCli(
        ['user', 'create', '--business', business.businessId, '--email', email, '--name', 'Ana', '--role', 'admin'],
        database.url,
      );
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already exists/);
      assertNoStack(again);
      const badRole = await runCli(
        [
          'user',
          'create',
          '--business',
          business.businessId,
          '--email',
          'x@example.com',
          '--name',
          'X',
          '--role',
          'god',
        ],
        database.url,
      );
      assert.equal(badRole.code, 2, 'a role that does not exist is a usage error');
      assert.match(badRole.stderr, /--role must be one of owner, admin, viewer/);
      const badEmail = await runCli(
        [
          'user',
          'create',
          '--business',
          business.businessId,
          '--email',
          'notanemail',
          '--name',
          'X',
          '--role',
          'viewer',
        ],
        database.url,
      );
      assert.equal(badEmail.code, 2, 'a value the service refuses as such is a usage error too');
      assert.match(badEmail.stderr, /email: Must be an email address/);
      const list = await runCli(['user', 'list', '--business', business.businessId], database.url);
      assert.match(list.stdout, new RegExp(`${user.id}\\s+${email.replace('.', '\\.')}\\s+Ana\\s+admin\\s+active`));
      const disabled = await runCli(
        ['user', 'disable', '--business', business.businessId, '--user-id', user.id],
        database.url,
      );
      assert.equal(disabled.code, 0, disabled.stderr);
      const listed = JSON.parse(
        (await runCli(['user', 'list', '--business', business.businessId, '--json'], database.url)).stdout,
      );
      assert.equal(listed.find((u: any) => u.id === user.id).status, 'disabled');
    });

    it('projections rebuild restores the derived order tables of a business from its orders', async () => {
      const handle = createDatabase(database.url);
      try {
        const business = await openBusiness(createWriteRunner(handle.db), 'Rebuilt Ltd');
        // Derived rows that no order supports, as a bad bulk load would leave them.
        await handle.db
          .insertInto('order_counts')
          .values({ business_id: business.businessId, phase: 'ACTIVE', status: 'PACKED', shard: 0, n: 5 })
          .execute();
        await handle.db
          .insertInto('order_property_counts')
          .values({
            business_id: business.businessId,
            path: 'ghost',
            day: '2026-01-01',
            phase: 'ACTIVE',
            status: 'PACKED',
            shard: 0,
            n: 2,
          })
          .execute();
        const rebuilt = await runCli(['projections', 'rebuild', '--business', business.businessId], database.url);
        assert.equal(rebuilt.code, 0, rebuilt.stderr);
        assert.match(rebuilt.stdout, new RegExp(`Rebuilt the order projections of ${business.businessId}`));
        const left = await handle.db
          .selectFrom('order_counts')
          .selectAll()
          .where('business_id', '=', business.businessId)
          .execute();
        assert.deepEqual(left, []);
        const paths = await handle.db
          .selectFrom('order_property_counts')
          .selectAll()
          .where('business_id', '=', business.businessId)
          .execute();
        assert.deepEqual(paths, []);
        const missing = await runCli(['projections', 'rebuild', '--business', 'bus_missing'], database.url);
        assert.equal(missing.code, 1);
        assert.match(missing.stderr, /Business bus_missing not found/);
      } finally {
        await handle.close();
      }
    });

    it('events tail prints the feed, follows new events until interrupted, and --once stops at the end', async () => {
      const created = await runCli(['business', 'create', '--name', 'Tailed Ltd', '--json'], database.url);
      const { businessId } = JSON.parse(created.stdout);
      const once = await runCli(['events', 'tail', '--business', businessId, '--once', '--json'], database.url);
      assert.equal(once.code, 0, once.stderr);
      const [first] = once.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(first.sequence, 1);
      assert.equal(first.type, 'api_key.created');
      assert.deepEqual(first.actor, { type: 'system', id: 'cli', name: 'Command line' });

      // Following: a key made meanwhile shows up as the next line; Ctrl-C ends it cleanly.
      const tail = spawn(
        process.execPath,
        [...runCli.argv(), 'events', 'tail', '--business', businessId, '--after', '1'],
        {
          cwd: root,
          env: { ...process.env, DATABASE_URL: database.url },
        },
      );
      let out = '';
      tail.stdout.on('data', (d) => {
        out += d;
      });
      await new Promise((r) => setTimeout(r, 1500));
      const key = JSON.parse(
        (await runCli(['key', 'create', '--business', businessId, '--json'], database.url)).stdout,
      );
      for (let i = 0; i < 50 && !out.includes(key.keyId); i++) await new Promise((r) => setTimeout(r, 100));
      tail.kill('SIGINT');
      const code = await new Promise((resolve) => tail.on('exit', resolve));
      assert.equal(code, 0);
      assert.match(out, new RegExp(`^2\t\\S+\tapi_key.created\t${key.keyId}\tsystem:cli$`, 'm'));

      const gone = await runCli(['events', 'tail', '--business', businessId, '--after', 'x'], database.url);
      assert.equal(gone.code, 2);
    });

    it('import applies an NDJSON file with progress, summarises it, and exits 1 when a line failed', async () => {
      const handle = createDatabase(database.url);
      const business = await openBusiness(createWriteRunner(handle.db), 'Import Ltd').finally(() => handle.close());
      const dir = mkdtempSync(join(tmpdir(), 'supplyline-cli-import-'));
      try {
        const item = (name: string) => ({
          op: 'create',
          resource: 'item',
          ref: name,
          data: { item: { name }, variants: [{ variantName: 'x', currency: 'AUD', price: 1 }] },
        });
        const good = join(dir, 'good.ndjson');
        writeFileSync(
          good,
          [
            item('Tea'),
            item('Coffee'),
            { op: 'patch', resource: 'item', id: { $ref: 'Tea' }, data: { description: 'Green' } },
          ]
            .map((l) => JSON.stringify(l))
            .join('\n'),
        );
        const bad = join(dir, 'bad.ndjson');
        writeFileSync(bad, `${JSON.stringify(item('Cocoa'))}\n{oops\n`);
        const [ok, failed, dry] = await Promise.all([
          runCli(['import', good, '--business', business.businessId], database.url),
          runCli(['import', bad, '--business', business.businessId, '--stop-on-error'], database.url),
          runCli(['import', good, '--business', business.businessId, '--dry-run'], database.url),
        ]);
        assert.equal(ok.code, 0, ok.stderr);
        assert.match(ok.stdout, /^Import imp_\w+ completed: 2 created, 1 updated, 0 unchanged, 0 failed, of 3 lines\./);
        assert.match(ok.stdout, /GET \/api\/v1\/imports\/imp_\w+\/results/);
        assert.match(ok.stderr, /100%/, 'progress on stderr');
        assert.equal(failed.code, 1, failed.stderr);
        assert.match(failed.stdout, /stopped at its first failed line: 1 created, .* 1 failed, of 2 lines/);
        assert.match(failed.stdout, /line 2: .*not valid JSON/);
        assert.equal(dry.code, 0, dry.stderr);
        assert.match(dry.stdout, /a dry run: nothing was written/);
        const check = createDatabase(database.url);
        try {
          const names = (
            await check.db.selectFrom('items').select('name').where('business_id', '=', business.businessId).execute()
          )
            .map((r) => r.name)
            .sort();
          assert.deepEqual(names, ['Cocoa', 'Coffee', 'Tea']);
        } finally {
          await check.close();
        }
        const missingFile = await runCli(
          ['import', join(dir, 'none.ndjson'), '--business', business.businessId],
          database.url,
        );
        assert.equal(missingFile.code, 1);
        assert.match(missingFile.stderr, /no such file/);
        assertNoStack(missingFile);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('unknown business and unknown key exit 1 with a message', async () => {
      const [business, key] = await Promise.all([
        runCli(['key', 'create', '--business', 'bus_missing', '--json'], database.url),
        runCli(['key', 'revoke', '--key-id', 'key_missing'], database.url),
      ]);
      assert.equal(business.code, 1);
      assert.equal(business.stdout, '');
      assert.match(business.stderr, /Business bus_missing not found/);
      assert.equal(key.code, 1);
      assert.match(key.stderr, /Key key_missing not found/);
      assertNoStack(business);
      assertNoStack(key);
    });
  });
}
