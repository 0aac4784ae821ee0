import type { Decimal } from 'decimal.js';
import { conflict, validationError, type FieldErrors } from '../lib/errors.ts';
import { toNumber } from '../lib/money.ts';
import type { OrderItemRow } from '../orders/mapper.ts';
import { checkItemIds, checkQuantity, dec, plain } from './quantities.ts';
import type { CreateShipmentInput, Shipment, ShipmentLineT, ShipmentPackage } from './shipment-schema.ts';
import { isSscc } from './sscc.ts';

/**
 * A new shipment's packages and lines, checked: packages or lines (not both), known order items,
 * each at most once per package, valid SSCCs each once, quantities above 0 and whole where the
 * line was ordered in whole units. Answers the packages as stored and the lines added up.
 */
export function readContents(
  input: CreateShipmentInput,
  items: Map<string, OrderItemRow>,
): { packages: ShipmentPackage[]; lines: Shipment['lines'] } {
  const errors: FieldErrors = {};
  if (input.packages && input.lines) errors.lines = 'Send packages (each with its lines) or lines, not both';
  if (!input.packages && !input.lines) errors.lines = 'Send packages (each with its lines) or lines';
  if (Object.keys(errors).length > 0) throw validationError(errors);
  const groups: Array<{ prefix: string; lines: ShipmentLineT[] }> = input.packages
    ? input.packages.map((p, i) => ({ prefix: `packages.${i}.lines`, lines: p.lines }))
    : [{ prefix: 'lines', lines: input.lines! }];
  for (const group of groups) {
    checkItemIds(
      errors,
      group.prefix,
      group.lines.map((l) => l.orderItemId),
      items,
    );
    group.lines.forEach((line, i) => {
      const item = items.get(line.orderItemId);
      if (item) checkQuantity(errors, `${group.prefix}.${i}.quantity`, line.quantity, item);
    });
  }
  const ssccs = new Set<string>();
  input.packages?.forEach((p, i) => {
    if (p.sscc == null) return;
    if (!isSscc(p.sscc)) errors[`packages.${i}.sscc`] = 'Not an SSCC: 18 digits ending in the GS1 check digit';
    else if (ssccs.has(p.sscc)) errors[`packages.${i}.sscc`] = 'Named twice: each package has its own SSCC';
    ssccs.add(p.sscc);
  });
  if (Object.keys(errors).length > 0) throw validationError(errors);

  const packages = (input.packages ?? []).map((p) => ({
    sscc: p.sscc ?? null,
    trackingNumber: p.trackingNumber ?? null,
    weight: p.weight ?? null,
    dimensions: p.dimensions ?? null,
    lines: p.lines.map((l) => ({ orderItemId: l.orderItemId, quantity: l.quantity })),
  }));
  const totals = new Map<string, Decimal>();
  for (const line of groups.flatMap((g) => g.lines))
    totals.set(line.orderItemId, (totals.get(line.orderItemId) ?? dec(0)).plus(dec(line.quantity)));
  const order = [...items.values()].map((item) => item.id);
  const lines = order
    .filter((id) => totals.has(id))
    .map((id) => ({ orderItemId: id, quantity: toNumber(plain(totals.get(id)!))! }));
  return { packages, lines };
}

/** Refuses (409) a shipment that would take a line past what may ship of it, naming the line and what is left. */
export function checkWithinShippable(
  lines: Shipment['lines'],
  items: Map<string, OrderItemRow>,
  shippable: Map<string, Decimal>,
  shipped: Map<string, Decimal>,
): void {
  for (const line of lines) {
    const limit = shippable.get(line.orderItemId)!;
    const held = shipped.get(line.orderItemId) ?? dec(0);
    const left = limit.minus(held);
    if (dec(line.quantity).greaterThan(left)) {
      const item = items.get(line.orderItemId)!;
      throw conflict(
        `Line ${item.line_number} (${line.orderItemId}) has ${plain(left.isNegative() ? dec(0) : left)} left to ship ` +
          `(${plain(limit)} may ship, ${plain(held)} already in shipments); this shipment has ${line.quantity}`,
      );
    }
  }
}
