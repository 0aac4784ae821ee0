// The client's types, checked by the compiler: every TypeScript snippet of the two READMEs
// compiles under strict settings against the client's sources, and the mistakes integrators make
// (a wrong filter, enum or range; a field of another resource's event) do not.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sl-client-types-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The ```ts blocks of a Markdown file (of one section when `section` names its heading). */
export function snippets(file: string, section?: string): string[] {
  let text = readFileSync(join(root, file), 'utf8');
  if (section) text = text.slice(text.indexOf(`## ${section}`)).split(/\n## /)[0];
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

// What the snippets take as given: the caller's own values.
const givens = `
declare const baseUrl: string, businessId: string, apiKey: string, buyerId: string, crmId: string;
declare const rawBody: string, headers: Record<string, string>, lastCheckpoint: number;
declare function save(sequence: number): void;
`;

// Each line marked @ts-expect-error must fail to compile (an unused marker is itself an error).
const mistakes = `
import { createSupplylineClient, type SupplylineEvent } from '@supplyline/client';
const client = createSupplylineClient({ baseUrl: '', businessId: '', apiKey: '' });
// @ts-expect-error: not a filter of the order list
client.orders.list({ state: 'ACTIVE' });
// @ts-expect-error: not a phase
client.orders.list({ phase: 'PENDNG' });
// @ts-expect-error: above the list's limit of 100
client.orders.list({ limit: 500 });
// @ts-expect-error: the iterator walks the cursor itself
client.orders.list({ cursor: 'abc' });
client.orders.page({ cursor: 'abc', limit: 100, phase: 'PENDING', status: 'ACCEPTED' });
client.events.list({ after: 0, limit: 1000 });
// @ts-expect-error: above the feed's limit of 1000
client.events.list({ limit: 1001 });
client.priceLists.create({ itemListData: { label: 'Trade' } });
client.items.create({ item: { name: 'Widget' }, variants: [{ currency: 'AUD', price: 1, cost: 1 }] });
// @ts-expect-error: a field the API does not have
client.items.create({ item: { name: 'Widget', colour: 'red' }, variants: [] });
client.buyers.create({ buyer: { name: 'Acme' } }, { idempotencyKey: 'k', timeout: 1000, signal: AbortSignal.timeout(1), headers: { a: 'b' } });
// @ts-expect-error: buyers have no DELETE
client.buyers.delete('phm_1');
client.shipments.create('ord_1', { packages: [{ sscc: '000123456000000012', lines: [{ orderItemId: 'oi_1', quantity: 1 }] }] });
// @ts-expect-error: not a shipment status a PATCH sets
client.shipments.patch('shp_1', { status: 'VOIDED' });
client.acknowledgements.create('ord_1', { lines: [{ orderItemId: 'oi_1', decision: 'BACKORDERED' }] });
export function apply(event: SupplylineEvent): string {
  switch (event.type) {
    case 'order.created': return event.data.object.totalAmount;
    case 'item.updated': return event.data.object.name;
    case 'shipment.voided': return event.data.object.status;
    // @ts-expect-error: an item has no totalAmount
    case 'item.created': return event.data.object.totalAmount;
    // @ts-expect-error: not an event type
    case 'order.changed': return '';
    default: return event.resourceType;
  }
}
`;

it("the client's README's and guide's TypeScript snippets compile, and wrong queries and event fields do not", () => {
  const files = [...snippets('clients/typescript/README.md'), ...snippets('docs/client.md')].map((code, i) => {
    const file = join(dir, `snippet-${i}.mts`);
    writeFileSync(file, `${code}\nexport {};\n`);
    return file;
  });
  assert.ok(files.length >= 6, `found ${files.length} snippets`);
  writeFileSync(join(dir, 'givens.d.ts'), givens);
  writeFileSync(join(dir, 'mistakes.mts'), mistakes);
  const program = ts.createProgram([...files, join(dir, 'givens.d.ts'), join(dir, 'mistakes.mts')], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    types: [],
    skipLibCheck: true,
    // The package by name, from its sources, as an installed one resolves to its build.
    paths: {
      '@supplyline/client': [join(root, 'clients/typescript/src/index.ts')],
      '@supplyline/client/webhooks': [join(root, 'clients/typescript/src/webhooks.ts')],
    },
  });
  const errors = ts
    .getPreEmitDiagnostics(program)
    .map(
      (d) =>
        `${d.file ? `${d.file.fileName.replace(dir, '')}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
  assert.deepEqual(errors, []);
});
