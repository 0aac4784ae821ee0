import type { ParsedLine } from './lines.ts';
import type { Applied } from './operations.ts';

/** Of the earlier lines a dry run's line of an order was checked without, how many it names; and orders followed. */
const NOTED = 10;
const FOLLOWED_ORDERS = 100_000;

/** The order a line changes: an acknowledgement's or shipment's, or an order patched by id. */
const touchedOrder = (line: ParsedLine): string | undefined =>
  line.orderId ?? (line.resource === 'order' && line.op === 'patch' ? line.id : undefined);

/**
 * A dry run's lines that would have changed each order, up to NOTED of each: a later line of the
 * order was checked against the order as it is, without them, and its result says so
 * (`checkedWithout`). A write run again (src/write/groups.ts) sees its own lines here, so only
 * lines before a line count.
 */
export class DryRunNotes {
  readonly #touched = new Map<string, number[]>();

  /** `applied` for line `line`, noting the earlier lines of its order it was checked without. */
  note(line: number, resolved: ParsedLine, applied: Applied): Applied {
    const order = touchedOrder(resolved);
    if (order === undefined) return applied;
    const lines = this.#touched.get(order) ?? [];
    const earlier = lines.filter((l) => l < line);
    if (lines.length < NOTED && !lines.includes(line) && (lines.length > 0 || this.#touched.size < FOLLOWED_ORDERS))
      this.#touched.set(order, [...lines, line]);
    return earlier.length === 0 || applied.checkedWithout || applied.variants !== undefined
      ? applied
      : { ...applied, checkedWithout: earlier };
  }
}
