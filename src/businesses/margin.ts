/**
 * The supplier's margin: the fields a key without `margin:read` never sees, and may not send
 * without `margin:write` (docs/decisions/0043-restricted-keys.md). They are found by name wherever
 * they stand in a body (a variant, an order line, a price list, an event's object or changes),
 * except inside the caller's own free-form objects, whose keys are data, not fields.
 */
const MARGIN_FIELDS = new Set(['cost', 'globalCostFactor']);
const FREE_FORM = ['properties', 'buyerInfo'];

/** `properties`, `buyerInfo`, and a change's path into them (`properties.erp.cost`). */
const isFreeForm = (key: string) => FREE_FORM.some((f) => key === f || key.startsWith(`${f}.`));

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A copy of a JSON value without its margin fields. */
export function withoutMargin<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutMargin) as T;
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (MARGIN_FIELDS.has(key)) continue;
    out[key] = isFreeForm(key) ? child : withoutMargin(child);
  }
  return out as T;
}

/**
 * The dotted path of the first margin field a request body sends, if any. It runs before the
 * body's schema (which bounds nesting) is checked, so it walks with a stack of its own, never the
 * call stack: a body nested 100,000 deep is looked through, not a crash.
 */
export function marginFieldIn(body: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[body, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${path}${i}.`]);
    } else if (isRecord(value)) {
      const entries = Object.entries(value);
      const field = entries.find(([key]) => MARGIN_FIELDS.has(key));
      if (field) return `${path}${field[0]}`;
      for (let i = entries.length - 1; i >= 0; i--) {
        if (!isFreeForm(entries[i][0])) pending.push([entries[i][1], `${path}${entries[i][0]}.`]);
      }
    }
  }
  return undefined;
}

/**
 * A serialised JSON answer without its margin fields. Text that names no margin field is returned
 * as it is, unparsed: most answers (errors, buyers, invoices) have none.
 */
export function jsonWithoutMargin(text: string): string {
  if (!text.includes('"cost"') && !text.includes('"globalCostFactor"')) return text;
  return JSON.stringify(withoutMargin(JSON.parse(text)));
}
