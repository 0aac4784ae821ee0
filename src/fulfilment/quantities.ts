import { Decimal } from 'decimal.js';
import type { FieldErrors } from '../lib/errors.ts';
import type { OrderItemRow } from '../orders/mapper.ts';

/**
 * Line quantities of acknowledgements and shipments, in decimal arithmetic. What may ship of a line
 * is its ordered quantity less what the current acknowledgement rejected: the accepted quantity,
 * never more than ordered. A line added to the order after the acknowledgement is accepted as ordered.
 */
export const dec = (value: string | number) => new Decimal(typeof value === 'number' ? String(value) : value);

export const plain = (value: Decimal) => value.toFixed();

/** Per order item, how much may ship: ordered, or what the current acknowledgement accepted if less. */
export function shippableOf(
  items: OrderItemRow[],
  accepted: ReadonlyArray<{ orderItemId: string; quantity: number }>,
): Map<string, Decimal> {
  const acceptedOf = new Map(accepted.map((line) => [line.orderItemId, dec(line.quantity)]));
  return new Map(
    items.map((item) => {
      const ordered = dec(item.quantity);
      const kept = acceptedOf.get(item.id);
      return [item.id, kept === undefined ? ordered : Decimal.min(ordered, kept)];
    }),
  );
}

/**
 * Field errors of one quantity of a line: above 0 (unless `zero` allows it), whole where the line
 * was ordered in whole units, at most `max`.
 */
export function checkQuantity(
  errors: FieldErrors,
  field: string,
  quantity: number,
  item: OrderItemRow,
  options: { zero?: boolean; max?: Decimal } = {},
): void {
  const q = dec(quantity);
  const ordered = dec(item.quantity);
  if (q.isZero() && !options.zero) errors[field] = 'Must be above 0';
  else if (!q.isInteger() && ordered.isInteger())
    errors[field] = `Must be a whole number: line ${item.line_number} was ordered in whole units`;
  else if (options.max !== undefined && q.greaterThan(options.max))
    errors[field] = `Must be at most ${plain(options.max)} (line ${item.line_number})`;
}

/** Field errors for order item ids that are not this order's, or named twice. */
export function checkItemIds(errors: FieldErrors, prefix: string, ids: string[], items: Map<string, unknown>): void {
  const seen = new Set<string>();
  ids.forEach((id, i) => {
    if (!items.has(id)) errors[`${prefix}.${i}.orderItemId`] = 'Not an item of this order';
    else if (seen.has(id)) errors[`${prefix}.${i}.orderItemId`] = 'Named twice: name each order item once';
    seen.add(id);
  });
}
