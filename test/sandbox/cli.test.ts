import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { openBusiness } from '../../src/businesses/service.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { generateDemo } from '../../src/demo/generate.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createWriteRunner } from '../../src/write/runner.ts';
import { backends } from '../helpers/context.ts';
import { bundledCli, createDatabaseUrl } from '../helpers/cli.ts';

const SECRET_KEY = randomBytes(32).toString('base64');
const cli = bundledCli('sandbox-cli');
const runCli = (args: string[], url: string) => cli(args, url, { env: { SECRET_KEY } });

for (const backend of backends) {
  describe(`[${backend}] CLI sandbox`, () => {
    let database: { url: string; drop(): Promise<void> };
    let liveId: string;
    before(async () => {
      database = await createDatabaseUrl(backend);
      const handle = createDatabase(database.url);
      await migrateToLatest(handle.db, handle.dialect);
      liveId = (await openBusiness(createWriteRunner(handle.db), 'Cli Supplier')).businessId;
      await handle.close();
    });
    after(async () => {
      await database?.drop();
    });

    it('creates, lists, resets and deletes sandboxes, printing a test key once and progress on stderr', async () => {
      const first = await runCli(['sandbox', 'create', '--from', liveId, '--name', 'Trial', '--json'], database.url);
      assert.equal(first.code, 0, first.stderr);
      const made = JSON.parse(first.stdout);
      assert.match(made.apiKey, /^sl_test_[0-9A-Za-z]{36}$/);
      assert.equal(made.name, 'Trial');
      assert.deepEqual(made.copied.item_lists, 1);

      const second = await runCli(['sandbox', 'create', '--from', liveId], database.url);
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /Created sandbox bus_\w+ \(Cli Supplier \(sandbox\)\) of business /);
      assert.match(second.stdout, /X-API-Key: {5}sl_test_\w{36}\n/);
      assert.match(second.stderr, /100% {2}1\/1 item_lists/);

      const listed = await runCli(['sandbox', 'list', '--business', liveId, '--json'], database.url);
      assert.deepEqual(
        JSON.parse(listed.stdout).map((s: { name: string }) => s.name),
        ['Trial', 'Cli Supplier (sandbox)'],
      );
      const reset = await runCli(['sandbox', 'reset', '--business', made.sandboxId], database.url);
      assert.equal(reset.code, 0, reset.stderr);
      assert.match(reset.stdout, /^Reset sandbox bus_\w+ \(Trial\)\.\nCopied 1 item_lists\.\n$/);
      const deleted = await runCli(['sandbox', 'delete', '--business', made.sandboxId], database.url);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /^Deleted sandbox bus_\w+ \(Trial\) and its \d+ rows\.\n$/);
      const table = await runCli(['sandbox', 'list', '--business', liveId], database.url);
      assert.match(table.stdout, /^ID +NAME +CREATED +STATE\nbus_\w+ +Cli Supplier \(sandbox\) +\S+ +ready\n$/);

      const refused = await runCli(['sandbox', 'delete', '--business', liveId], database.url);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^Error: Business bus_\w+ is live, not a sandbox\n$/);
    });

    it("simulate: a buyer's orders at the rate asked, for the minutes asked", async () => {
      const handle = createDatabase(database.url);
      const demo = await generateDemo(handle.db, { orders: 0, items: 3, buyers: 2, seed: 1 });
      await handle.close();
      const made = JSON.parse(
        (await runCli(['sandbox', 'create', '--from', demo.businessId, '--json'], database.url)).stdout,
      );
      const run = await runCli(
        ['sandbox', 'simulate', '--business', made.sandboxId, '--orders-per-minute', '600', '--minutes', '0.01'],
        database.url,
      );
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trimEnd().split('\n');
      assert.equal(lines.filter((l) => / created +ord_\w+ /.test(l)).length, 6, run.stdout);
      assert.match(
        lines.at(-1)!,
        /^Simulated 6 orders; the buyer changed \d+, cancelled \d+ and received 0 of them\.$/,
      );
      for (const args of [
        ['--orders-per-minute', '0'],
        ['--orders-per-minute', 'x'],
        ['--orders-per-minute', '1', '--minutes', '-1'],
      ]) {
        const usage = await runCli(['sandbox', 'simulate', '--business', made.sandboxId, ...args], database.url);
        assert.equal(usage.code, 2, args.join(' '));
      }
      const live = await runCli(
        ['sandbox', 'simulate', '--business', demo.businessId, '--orders-per-minute', '60', '--minutes', '1'],
        database.url,
      );
      assert.equal(live.code, 1);
      assert.match(live.stderr, /is live, not a sandbox/);
    });
  });
}
