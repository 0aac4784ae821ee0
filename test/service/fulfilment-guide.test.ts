import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer, type Server } from '../reliability/helpers.ts';
import { runWalkthrough, walkthroughOf } from '../helpers/walkthrough.ts';

describe('docs/fulfilment.md: acknowledge, ship in two shipments, invoice each', () => {
  let dir: string;
  let server: Server;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'supplyline-fulfilment-'));
    server = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'guide.db')}` });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs in order, every command answering the status its comment states, with the results it describes', async () => {
    const block = walkthroughOf(
      readFileSync(new URL('../../docs/fulfilment.md', import.meta.url), 'utf8'),
      'fulfilment-walkthrough',
    );
    const result = await runWalkthrough(block, server);
    const { report } = result;
    // What `field` printed: each at the end of a line (curl's own answers have no newline).
    const printed = (text: string) => result.stdout.match(new RegExp(`(^|[}\\n])${text}$`, 'gm'))?.length ?? 0;
    assert.equal(printed('ACCEPTED_WITH_CHANGES'), 1, report);
    assert.equal(printed('IN_TRANSIT'), 1, report);
    assert.equal(printed('470\\.00'), 2, report);
    assert.equal(printed('DELIVERED'), 1, report);
    assert.match(result.stdout, /shipment\.created,shipment\.updated/);
  });
});
