/** A path that came has no `from`; one that went has no `to`; `null` is a value a path held. */
export interface FieldChange {
  from?: unknown;
  to?: unknown;
}

const fieldChange = (from: unknown, to: unknown): FieldChange => ({
  ...(from !== undefined && { from }),
  ...(to !== undefined && { to }),
});

/** A list of child records (order items, variants, contacts): which came, which changed how, which went. */
export interface ChildChanges {
  created: unknown[];
  updated: Array<{ id: string; changes: Changes }>;
  deleted: string[];
}

export type Changes = Record<string, FieldChange | ChildChanges>;

/** Fields every change moves; the event's resourceVersion and occurredAt already say so. */
const IMPLIED = new Set(['updatedAt', 'version']);

/** Equality of JSON values only (what a GET shows), cheaper than `isDeepStrictEqual`, which takes any value. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const key of keys) if (!Object.hasOwn(y, key) || !jsonEqual(x[key], y[key])) return false;
  return true;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isChildList = (value: unknown): value is Array<{ id: string }> =>
  Array.isArray(value) && value.every((v) => isRecord(v) && typeof v.id === 'string');

/** Every leaf of a properties object by its dotted path (objects are walked; arrays and scalars are leaves). */
function leaves(value: unknown, prefix: string, out: Map<string, unknown>): Map<string, unknown> {
  if (isRecord(value) && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) leaves(child, `${prefix}.${key}`, out);
  } else {
    out.set(prefix, value);
  }
  return out;
}

function propertyChanges(field: string, before: unknown, after: unknown, changes: Changes): void {
  const from = leaves(before ?? null, field, new Map());
  const to = leaves(after ?? null, field, new Map());
  for (const path of new Set([...from.keys(), ...to.keys()])) {
    const a = from.has(path) ? from.get(path) : undefined;
    const b = to.has(path) ? to.get(path) : undefined;
    if (!jsonEqual(a, b)) changes[path] = fieldChange(a, b);
  }
}

function childChanges(before: Array<{ id: string }>, after: Array<{ id: string }>): ChildChanges | null {
  const old = new Map(before.map((c) => [c.id, c]));
  const result: ChildChanges = { created: [], updated: [], deleted: [] };
  for (const child of after) {
    const was = old.get(child.id);
    if (!was) result.created.push(child);
    else {
      const changes = diffResource(was, child);
      if (Object.keys(changes).length > 0) result.updated.push({ id: child.id, changes });
    }
    old.delete(child.id);
  }
  result.deleted = [...old.keys()];
  return result.created.length + result.updated.length + result.deleted.length > 0 ? result : null;
}

/**
 * From the resource as the API showed it before and after: free-form objects by leaf path
 * (`properties.erp.no`), lists of child records by id as created, updated and deleted.
 */
export function diffResource(before: object, after: object): Changes {
  const changes: Changes = {};
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  for (const field of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (IMPLIED.has(field) || jsonEqual(a[field], b[field])) continue;
    if (
      (isRecord(a[field]) || a[field] === null) &&
      (isRecord(b[field]) || b[field] === null) &&
      (isRecord(a[field]) || isRecord(b[field]))
    ) {
      propertyChanges(field, a[field], b[field], changes);
    } else if (isChildList(a[field]) && isChildList(b[field])) {
      const children = childChanges(a[field] as Array<{ id: string }>, b[field] as Array<{ id: string }>);
      if (children) changes[field] = children;
    } else {
      changes[field] = fieldChange(a[field], b[field]);
    }
  }
  return changes;
}
