// @supplyline/client as an integrator gets it: `npm pack`, the tarball installed into an empty
// project outside the repository (from npm's cache: its one dependency is in it after the
// repository's own install), then the project's strict `tsc` over ESM and CommonJS code, an ESM
// import, a CommonJS require() and the mirror example run from the installed package against a
// real server, before and after a variant is renamed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createSupplylineClient } from '../../clients/typescript/src/index.ts';
import { baseEnv, cliCreateBusiness, DELIVERY, startServer, type Server, type Tenant } from '../reliability/helpers.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// Node strips the example's types where it can (22.18+); Node 20 gets the repository's tsx loader by its path.
const typescript = (process.features as { typescript?: unknown }).typescript
  ? []
  : ['--import', import.meta.resolve('tsx')];

const esm = `
import { createSupplylineClient, SupplylineApiError, SupplylineError, VERSION, type SupplylineEvent } from '@supplyline/client';
import { verifyWebhook } from '@supplyline/client/webhooks';
const client = createSupplylineClient({ baseUrl: 'http://127.0.0.1:1', businessId: 'bus_1', apiKey: 'sl_live_x' });
export const body = { item: { name: 'Widget' }, variants: [{ currency: 'AUD', price: 1, cost: 1 }] } satisfies Parameters<typeof client.items.create>[0];
// @ts-expect-error: not a phase
client.orders.list({ phase: 'PENDNG' });
export const describeEvent = (e: SupplylineEvent) => (e.type === 'order.updated' ? e.data.object.totalAmount : e.type);
console.log(JSON.stringify({ esm: typeof createSupplylineClient, verify: typeof verifyWebhook, version: VERSION, base: new SupplylineApiError(400, undefined) instanceof SupplylineError }));
`;
const cjs = `
import client = require('@supplyline/client');
import webhooks = require('@supplyline/client/webhooks');
const made = client.createSupplylineClient({ baseUrl: 'http://127.0.0.1:1', businessId: 'bus_1', apiKey: 'sl_live_x' });
// @ts-expect-error: above the list's limit
made.items.list({ limit: 500 });
console.log(JSON.stringify({ cjs: typeof client.createSupplylineClient, verify: typeof webhooks.verifyWebhook, version: client.VERSION }));
`;

describe('@supplyline/client installed from its tarball, outside the repository', () => {
  let dir: string;
  let project: string;
  let server: Server;
  let tenant: Tenant;
  let version: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sl-consumer-'));
    project = join(dir, 'project');
    mkdirSync(project);
    version = JSON.parse(readFileSync(join(root, 'clients/typescript/package.json'), 'utf8')).version;
    const [packed] = await Promise.all([
      run(npm, ['pack', '--pack-destination', dir, '--json'], { cwd: join(root, 'clients/typescript'), env: baseEnv }),
      startServer({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` }).then((s) => {
        server = s;
      }),
    ]);
    const tarball = join(dir, JSON.parse(packed.stdout)[0].filename);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run(npm, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: project,
      env: baseEnv,
    });
    tenant = await cliCreateBusiness(`sqlite:${join(dir, 'db.sqlite')}`, 'Consumer Supplier');
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds only the build, the sources, the README and the licence, with publishable metadata', () => {
    const installed = join(project, 'node_modules/@supplyline/client');
    assert.deepEqual(readdirSync(installed).sort(), ['LICENSE', 'README.md', 'dist', 'package.json', 'src']);
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    assert.equal(pkg.name, '@supplyline/client');
    assert.equal(pkg.license, 'Apache-2.0');
    assert.equal(pkg.version, version);
    assert.ok(pkg.repository?.url && pkg.exports['.'].import && pkg.exports['.'].require);
    assert.equal(JSON.parse(readFileSync(join(installed, 'dist/cjs/package.json'), 'utf8')).type, 'commonjs');
  });

  it('type-checks ESM and CommonJS code, and the example, under strict tsc (a wrong phase or limit must not compile, so the declarations are real)', async () => {
    writeFileSync(join(project, 'esm.ts'), esm);
    writeFileSync(join(project, 'cjs.cts'), cjs);
    copyFileSync(join(root, 'examples/mirror-orders.ts'), join(project, 'mirror-orders.ts'));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM', 'DOM.Iterable'],
          allowImportingTsExtensions: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        include: ['esm.ts', 'cjs.cts', 'mirror-orders.ts'],
      }),
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).catch((error) =>
      assert.fail(error.stdout || error.message),
    );
  });

  it('imports as ESM and requires as CommonJS', async () => {
    const imported = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
      import { createSupplylineClient, VERSION } from '@supplyline/client';
      import { verifyWebhook } from '@supplyline/client/webhooks';
      console.log(JSON.stringify({ esm: typeof createSupplylineClient, verify: typeof verifyWebhook, version: VERSION }));`,
      ],
      { cwd: project },
    );
    assert.deepEqual(JSON.parse(imported.stdout), { esm: 'function', verify: 'function', version });
    const required = await run(
      process.execPath,
      [
        '-e',
        `
      const { createSupplylineClient, SupplylineError, SupplylineApiError, VERSION } = require('@supplyline/client');
      const { verifyWebhook } = require('@supplyline/client/webhooks');
      console.log(JSON.stringify({ cjs: typeof createSupplylineClient, verify: typeof verifyWebhook, version: VERSION, base: new SupplylineApiError(400) instanceof SupplylineError }));`,
      ],
      { cwd: project },
    );
    assert.deepEqual(JSON.parse(required.stdout), { cjs: 'function', verify: 'function', version, base: true });
  });

  it('runs the mirror example from the installed package, and it stays exact through a variant rename', async () => {
    const client = createSupplylineClient({
      baseUrl: server.base,
      businessId: tenant.businessId,
      apiKey: tenant.apiKey,
    });
    const item = await client.items.create({
      item: { name: 'Widget' },
      variants: [{ currency: 'AUD', price: 12.5, cost: 4 }],
    });
    const buyer = await client.buyers.create({ buyer: { name: 'Acme Foods' } });
    const variantId = item.variantIds[0];
    for (const quantity of [1, 2])
      await client.orders.create(buyer.id, {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: variantId, quantity }],
      });
    const env = {
      ...baseEnv,
      SUPPLYLINE_URL: server.base,
      SUPPLYLINE_BUSINESS_ID: tenant.businessId,
      SUPPLYLINE_API_KEY: tenant.apiKey,
    };
    const mirror = join(project, 'orders.json');
    const example = () => run(process.execPath, [...typescript, 'mirror-orders.ts', mirror], { cwd: project, env });
    const first = await example();
    assert.match(first.stdout, /loaded 2 orders from the export/);
    assert.match(first.stdout, /in sync: 2 orders/);
    await client.items.patch(item.id, {
      updateVariants: [{ id: variantId, variantName: 'Renamed', sku: 'RENAMED-1' }],
    });
    await client.orders.create(buyer.id, {
      expectedDeliveryAt: DELIVERY,
      orderItems: [{ itemVariantId: variantId, quantity: 3 }],
    });
    const second = await example();
    assert.doesNotMatch(second.stdout, /loaded/, 'the second run resumes from the feed');
    assert.match(second.stdout, /in sync: 3 orders/);
    const names = Object.values(
      JSON.parse(readFileSync(mirror, 'utf8')).orders as Record<
        string,
        { orderItems: Array<{ itemListEntry: { itemVariant: { variantName: string } } }> }
      >,
    )
      .map((o) => o.orderItems[0].itemListEntry.itemVariant.variantName)
      .sort();
    assert.deepEqual(names, ['Default', 'Default', 'Renamed'], 'orders keep the name they sold under');
  });
});
