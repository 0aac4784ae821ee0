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

/** The dotted path of the first margin field a request body sends, if any. */
export function marginFieldIn(value: unknown, path = ''): string | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = marginFieldIn(value[i], `${path}${i}.`);
      if (found) return found;
    }
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (MARGIN_FIELDS.has(key)) return `${path}${key}`;
    if (isFreeForm(key)) continue;
    const found = marginFieldIn(child, `${path}${key}.`);
    if (found) return found;
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
