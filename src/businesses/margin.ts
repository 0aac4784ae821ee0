/**
 * The supplier's margin: fields a key without `margin:read` never sees and may not send without
 * `margin:write` (docs/decisions/0043), found by name anywhere in a body except inside free-form objects.
 */
const MARGIN_FIELDS = new Set(['cost', 'globalCostFactor']);
const FREE_FORM = ['properties', 'buyerInfo'];

/** Free-form objects, and a change's path into them. */
const isFreeForm = (key: string) => FREE_FORM.some((f) => key === f || key.startsWith(`${f}.`));

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

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

/** The first margin field a body sends, if any; runs before the schema bounds nesting, so it walks with its own stack. */
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

/** A JSON answer without margin fields; text that names none is returned unparsed. */
export function jsonWithoutMargin(text: string): string {
  if (!text.includes('"cost"') && !text.includes('"globalCostFactor"')) return text;
  return JSON.stringify(withoutMargin(JSON.parse(text)));
}
