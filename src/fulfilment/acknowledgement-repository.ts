import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../db/types.ts';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { Acknowledgement, AcknowledgementLine } from './acknowledgement-schema.ts';
import type { AcknowledgementTable } from './table.ts';

type AcknowledgementRow = Selectable<AcknowledgementTable>;

export function toAcknowledgement(row: AcknowledgementRow): Acknowledgement {
  return {
    id: row.id,
    orderId: row.order_id,
    decision: row.decision as Acknowledgement['decision'],
    phase: row.phase as Acknowledgement['phase'],
    notes: row.notes,
    decidedAt: toIso(row.decided_at),
    lines: readJson<AcknowledgementLine[]>(row.lines) ?? [],
  };
}

export async function insertAcknowledgement(db: Db, row: Insertable<AcknowledgementTable>): Promise<void> {
  await db.insertInto('acknowledgements').values(row).execute();
}

/** An order's acknowledgements, newest first. */
export async function listAcknowledgements(db: Db, businessId: string, orderId: string): Promise<Acknowledgement[]> {
  const rows = await db
    .selectFrom('acknowledgements')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('order_id', '=', orderId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toAcknowledgement);
}

export async function findAcknowledgement(
  db: Db,
  businessId: string,
  id: string,
): Promise<Acknowledgement | undefined> {
  const row = await db
    .selectFrom('acknowledgements')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && toAcknowledgement(row);
}
