/**
 * The copy of a live business's configuration into its sandbox: items and variants, price lists and
 * their entries, buyers with their contacts and partnerships, and webhook endpoints (disabled, with
 * a secret of their own). Never orders, invoices, keys, users or secrets. Each table is read in pages
 * by id and written one batch per write, under the sandbox's own write lock, so the live business
 * never waits for more than one batch. Rows get new ids; what they name is mapped to the copies.
 */
import { setImmediate } from 'node:timers/promises';
import { insertRows } from '../db/bulk.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { newId, type IdPrefix } from '../lib/ids.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { lastSequence } from '../log/events.ts';
import { newWebhookSecret } from '../webhooks/signature.ts';
import type { Actor, WriteRunner } from '../write/runner.ts';

type Row = Record<string, unknown>;

interface TableCopy {
  table: string;
  /** New ids with this prefix; or `sameAs`: the id of the copy of the row with the same id in that table. */
  prefix?: IdPrefix;
  sameAs?: string;
  /** Soft-deleted rows stay behind. */
  live?: boolean;
  /** Columns naming another copied table's row: a row whose reference was not copied is left out. */
  references?: Record<string, string>;
  /** As `references`, but a reference that was not copied becomes null. */
  optionalReferences?: Record<string, string>;
  json?: string[];
  /** Columns set anew in the copy. */
  fresh?: (db: Db, sandboxId: string) => Promise<Row>;
}

/** Called after each batch with the table and how many of its rows are copied so far of `total`. */
export type CopyProgress = (table: string, done: number, total: number) => void;

export interface CopySettings {
  writes: WriteRunner;
  actor: Actor;
  box: SecretBox;
  /** Rows per write. */
  batchSize?: number;
  progress?: CopyProgress;
}

function plan(box: SecretBox): TableCopy[] {
  return [
    { table: 'item_lists', prefix: 'list', live: true },
    { table: 'items', prefix: 'itm', live: true, json: ['properties'] },
    { table: 'platform_items', sameAs: 'items' },
    { table: 'item_variants', prefix: 'var', live: true, references: { item_id: 'items' }, json: ['properties'] },
    {
      table: 'item_list_entries',
      prefix: 'ile',
      references: { item_list_id: 'item_lists', item_variant_id: 'item_variants' },
    },
    { table: 'phantoms', prefix: 'phm', live: true, json: ['buyer_info', 'properties'] },
    { table: 'phantom_buyers', sameAs: 'phantoms' },
    { table: 'phantom_emails', prefix: 'eml', references: { phantom_id: 'phantoms' } },
    { table: 'phantom_phones', prefix: 'phn', references: { phantom_id: 'phantoms' } },
    { table: 'phantom_locations', prefix: 'loc', references: { phantom_id: 'phantoms' } },
    {
      table: 'partnerships',
      prefix: 'prt',
      live: true,
      references: { phantom_id: 'phantoms' },
      optionalReferences: { item_list_id: 'item_lists' },
    },
    {
      table: 'webhook_endpoints',
      prefix: 'we',
      live: true,
      json: ['event_types'],
      // Disabled until enabled in the sandbox, and signing with a secret the live endpoint never had.
      fresh: async (db, sandboxId) => ({
        status: 'disabled',
        secret: box.seal(newWebhookSecret()),
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        cursor_sequence: await lastSequence(db, sandboxId),
      }),
    },
  ];
}

async function countRows(db: Db, copy: TableCopy, businessId: string): Promise<number> {
  const row = await db
    .selectFrom(copy.table as 'items')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', businessId)
    .$if(copy.live === true, (q) => q.where(whereLive()))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function readPage(db: Db, copy: TableCopy, businessId: string, after: string, limit: number): Promise<Row[]> {
  return (await db
    .selectFrom(copy.table as 'items')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '>', after)
    .$if(copy.live === true, (q) => q.where(whereLive()))
    .orderBy('id')
    .limit(limit)
    .execute()) as Row[];
}

const jsonText = (value: unknown) => (value === null || typeof value === 'string' ? value : JSON.stringify(value));

/** Copies the live business's configuration into the sandbox; the number of rows copied per table. */
export async function copyConfiguration(
  db: Db,
  liveId: string,
  sandboxId: string,
  settings: CopySettings,
): Promise<Record<string, number>> {
  const batchSize = settings.batchSize ?? 2000;
  const ids = new Map<string, Map<string, string>>();
  const copied: Record<string, number> = {};
  for (const copy of plan(settings.box)) {
    const mapped = new Map<string, string>();
    ids.set(copy.table, mapped);
    const total = await countRows(db, copy, liveId);
    let done = 0;
    settings.progress?.(copy.table, 0, total);
    for (let after = ''; ; ) {
      const page = await readPage(db, copy, liveId, after, batchSize);
      if (page.length === 0) break;
      after = String(page.at(-1)!.id);
      // A reset copies into a sandbox closed to other writes (src/sandbox/service.ts).
      await settings.writes.run({ businessId: sandboxId, actor: settings.actor, whileClosed: true }, async (ctx) => {
        const fresh = copy.fresh ? await copy.fresh(ctx.trx, sandboxId) : {};
        const rows: Row[] = [];
        for (const row of page) {
          const out = copyRow(row, copy, ids, sandboxId, fresh);
          if (!out) continue;
          mapped.set(String(row.id), String(out.id));
          rows.push(out);
        }
        if (rows.length === 0) return;
        const columns = Object.keys(rows[0]);
        await insertRows(
          ctx.trx,
          copy.table,
          columns,
          rows.map((r) => columns.map((c) => r[c])),
        );
        done += rows.length;
      });
      settings.progress?.(copy.table, done, total);
      // Live requests get their turn between batches: SQLite's driver is synchronous, and without this
      // a copy run by the server (the console's) would be one chain of promises that keeps the sockets waiting.
      await setImmediate();
    }
    copied[copy.table] = done;
  }
  return copied;
}

/** The row as its copy, or null when a row it needs was not copied. */
function copyRow(
  row: Row,
  copy: TableCopy,
  ids: Map<string, Map<string, string>>,
  sandboxId: string,
  fresh: Row,
): Row | null {
  const id = copy.sameAs ? ids.get(copy.sameAs)!.get(String(row.id)) : newId(copy.prefix!);
  if (id === undefined) return null;
  const out: Row = { ...row, id, business_id: sandboxId, ...fresh };
  for (const [column, table] of Object.entries(copy.references ?? {})) {
    const target = ids.get(table)!.get(String(row[column]));
    if (target === undefined) return null;
    out[column] = target;
  }
  for (const [column, table] of Object.entries(copy.optionalReferences ?? {}))
    out[column] = row[column] === null ? null : (ids.get(table)!.get(String(row[column])) ?? null);
  for (const column of copy.json ?? []) out[column] = jsonText(row[column]);
  return out;
}
