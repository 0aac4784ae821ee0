import { validationError, conflict, type FieldErrors } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { formatAmount, toDecimalString, toNumber } from '../lib/money.ts';
import { parseDateTime } from '../lib/time.ts';
import type { OrderItemRow } from '../orders/mapper.ts';
import type { WriteContext } from '../write/runner.ts';
import type {
  Acknowledgement,
  AcknowledgementLine,
  AcknowledgementLineInputT,
  CreateAcknowledgementInput,
} from './acknowledgement-schema.ts';
import { insertAcknowledgement } from './acknowledgement-repository.ts';
import { findLiveVariantIds } from '../pricing/repository.ts';
import { changeOrder, lockOrder } from './order-effects.ts';
import { checkItemIds, checkQuantity, dec, plain, shippableOf } from './quantities.ts';
import { shippedOf } from './shipped-quantities.ts';
import { followSet } from './order-status.ts';
import { findAcknowledgement } from './acknowledgement-repository.ts';

/** What each decision needs besides its quantity. */
const NEEDS: Partial<Record<AcknowledgementLineInputT['decision'], keyof AcknowledgementLineInputT>> = {
  QUANTITY_CHANGED: 'quantity',
  PRICE_CHANGED: 'price',
  SUBSTITUTED: 'substituteVariantId',
  RESCHEDULED: 'expectedAt',
};

function toLine(item: OrderItemRow, input: AcknowledgementLineInputT | undefined): AcknowledgementLine {
  const ordered = toNumber(item.quantity)!;
  const decision = input?.decision ?? 'ACCEPTED';
  return {
    orderItemId: item.id,
    lineNumber: item.line_number,
    decision,
    orderedQuantity: ordered,
    quantity: input?.quantity ?? (decision === 'REJECTED' ? 0 : ordered),
    price: input?.price === undefined ? null : formatAmount(toDecimalString(input.price)),
    substituteVariantId: input?.substituteVariantId ?? null,
    expectedAt: input?.expectedAt === undefined ? null : parseDateTime(input.expectedAt),
    reason: input?.reason ?? null,
    reasonCode: input?.reasonCode ?? null,
  };
}

/** Field errors of the named lines: known items, each once, with what their decision needs. */
async function checkLines(ctx: WriteContext, inputs: AcknowledgementLineInputT[], items: Map<string, OrderItemRow>) {
  const errors: FieldErrors = {};
  checkItemIds(
    errors,
    'lines',
    inputs.map((l) => l.orderItemId),
    items,
  );
  const variants = await findLiveVariantIds(
    ctx.trx,
    ctx.businessId,
    inputs.flatMap((l) => (l.substituteVariantId ? [l.substituteVariantId] : [])),
  );
  inputs.forEach((line, i) => {
    const item = items.get(line.orderItemId);
    const field = `lines.${i}`;
    const needed = NEEDS[line.decision];
    if (needed && line[needed] === undefined) errors[`${field}.${needed}`] = `Required for ${line.decision}`;
    if (line.substituteVariantId !== undefined && !variants.has(line.substituteVariantId))
      errors[`${field}.substituteVariantId`] = 'Not a live variant of this business';
    if (!item || line.quantity === undefined) return;
    const ordered = dec(item.quantity);
    if (line.decision === 'REJECTED' && line.quantity !== 0) errors[`${field}.quantity`] = 'Must be 0 for REJECTED';
    else if (line.decision === 'ACCEPTED' && !dec(line.quantity).equals(ordered))
      errors[`${field}.quantity`] = 'ACCEPTED takes the ordered quantity: use QUANTITY_CHANGED for another';
    else if (line.decision === 'QUANTITY_CHANGED' && dec(line.quantity).equals(ordered))
      errors[`${field}.quantity`] = 'Equal to the ordered quantity: use ACCEPTED';
    else if (line.decision !== 'REJECTED')
      checkQuantity(errors, `${field}.quantity`, line.quantity, item, { max: ordered });
  });
  if (Object.keys(errors).length > 0) throw validationError(errors);
}

const headerOf = (lines: AcknowledgementLine[]): Acknowledgement['decision'] =>
  lines.every((l) => l.decision === 'ACCEPTED')
    ? 'ACCEPTED'
    : lines.every((l) => l.decision === 'REJECTED')
      ? 'REJECTED'
      : 'ACCEPTED_WITH_CHANGES';

/**
 * Records the order's acknowledgement, which becomes its current one, under the order's row lock:
 * lines not named are accepted as ordered; a line may not accept less than its shipments hold (409).
 * The order shows its summary, and takes `phase` if given, with one new version and `order.acknowledged`.
 */
export async function acknowledgeOrder(
  ctx: WriteContext,
  orderId: string,
  input: CreateAcknowledgementInput,
): Promise<Acknowledgement> {
  const order = await lockOrder(ctx, orderId);
  const items = new Map(order.items.map((item) => [item.id, item]));
  const inputs = input.lines ?? [];
  await checkLines(ctx, inputs, items);
  const named = new Map(inputs.map((l) => [l.orderItemId, l]));
  const lines = order.items.map((item) => toLine(item, named.get(item.id)));
  const shipped = shippedOf(order);
  for (const line of lines) {
    const held = shipped.get(line.orderItemId);
    if (held?.greaterThan(dec(line.quantity)))
      throw conflict(
        `Line ${line.lineNumber} (${line.orderItemId}) has ${plain(held)} in shipments; void some before accepting ${line.quantity}`,
      );
  }
  const acknowledgement: Acknowledgement = {
    id: newId('ack'),
    orderId,
    decision: headerOf(lines),
    phase: input.phase ?? null,
    notes: input.notes ?? null,
    decidedAt: ctx.now,
    lines,
  };
  await insertAcknowledgement(ctx.trx, {
    id: acknowledgement.id,
    business_id: ctx.businessId,
    order_id: orderId,
    decision: acknowledgement.decision,
    phase: acknowledgement.phase,
    notes: acknowledgement.notes,
    lines: writeJson(lines),
    decided_at: ctx.now,
    created_at: ctx.now,
  });
  const current = order.row.acknowledgement_id
    ? await findAcknowledgement(ctx.trx, ctx.businessId, order.row.acknowledgement_id)
    : undefined;
  const follows = await followSet(
    ctx,
    order,
    { shippable: shippableOf(order.items, current?.lines ?? []), shipped, shipment: null },
    { shippable: shippableOf(order.items, lines), shipped, shipment: null },
  );
  await changeOrder(
    ctx,
    order,
    {
      ...follows,
      acknowledgement_id: acknowledgement.id,
      acknowledged_at: ctx.now,
      acknowledgement_summary: acknowledgement.decision,
      ...(input.phase !== undefined && { phase: input.phase }),
    },
    'acknowledged',
  );
  return acknowledgement;
}
