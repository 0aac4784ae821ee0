/**
 * What an API key may do (docs/decisions/0012-api-keys.md, README "Restricted keys"): per area
 * `read` or `write` (write includes read); `margin:read` to see cost fields and `margin:write` to
 * send them (src/businesses/margin.ts); `audit:read` for the audit trail. A key without scopes
 * (every key made before them, and keys made without `--scopes`) may do everything.
 */
export const AREAS = [
  'items',
  'buyers',
  'pricing',
  'orders',
  'invoices',
  'events',
  'webhooks',
  'imports',
  'fulfilment',
] as const;
export type Area = (typeof AREAS)[number];
/** Scopes of no route's area: what a key sees of the others' records, and the audit trail. */
export const EXTRA_SCOPES = ['margin:read', 'margin:write', 'audit:read'] as const;
export type Scope = `${Area}:${'read' | 'write'}` | (typeof EXTRA_SCOPES)[number];

/** Every scope there is, for documents and forms. */
export const SCOPES: Scope[] = [
  ...AREAS.flatMap((area) => [`${area}:read`, `${area}:write`] as Scope[]),
  ...EXTRA_SCOPES,
];

/** `orders:write,items:read` as a list of scopes; throws a message naming what is wrong. */
export function parseScopes(text: string): Scope[] {
  const scopes = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const unknown = scopes.filter((s) => !SCOPES.includes(s as Scope));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown scope ${unknown.join(', ')}: scopes are ` +
        [...AREAS.map((a) => `${a}:read|write`), 'margin:read|write', 'audit:read'].join(', '),
    );
  }
  if (scopes.length === 0) throw new Error('Give at least one scope, for example orders:write,items:read');
  return [...new Set(scopes)] as Scope[];
}

/** Whether `scopes` (null: every scope) allow `required`; a write scope allows reading its area. */
export function allows(scopes: readonly Scope[] | null, required: Scope): boolean {
  if (scopes === null) return true;
  const [area, level] = required.split(':');
  return scopes.includes(required) || (level === 'read' && scopes.includes(`${area}:write` as Scope));
}

/**
 * The scopes an API operation needs, from its route (`/api/v1/orders/:id`) and method: that of its
 * area (`areaScope`); writing webhook endpoints also needs `events:read`, as an endpoint receives
 * the business's events, which the feed reads. None for no API route.
 */
export function requiredScopes(method: string, route: string | undefined): Scope[] {
  const scope = areaScope(method, route);
  if (!scope) return [];
  return scope === 'webhooks:write' ? [scope, 'events:read'] : [scope];
}

/**
 * The scope of an API operation's area: the area of its first path segment (an order created for a
 * buyer, or by the sandbox's simulated buyer, is an order; the feed, histories and exports are
 * `events`), read for GET and HEAD, write otherwise. Undefined for no API route.
 */
function areaScope(method: string, route: string | undefined): Scope | undefined {
  const parts = route?.replace(/^\/api\/v1\//, '').split('/');
  if (!parts || parts[0] === '' || !route!.startsWith('/api/v1/')) return undefined;
  const reading = method === 'GET' || method === 'HEAD';
  const level = reading ? 'read' : 'write';
  const streams = parts[0] === 'events' || parts.at(-1) === 'events' || parts.at(-1) === 'export';
  if (parts[0] === 'audit-events') return reading ? 'audit:read' : undefined;
  const area: Area | undefined = streams
    ? 'events'
    : parts[0] === 'shipments' || (parts[0] === 'orders' && ['acknowledgements', 'shipments'].includes(parts[2]))
      ? 'fulfilment'
      : (parts[0] === 'buyers' && parts[2] === 'orders') || (parts[0] === 'sandbox' && parts.at(-1) === 'orders')
        ? 'orders'
        : parts[0] === 'webhook-endpoints'
          ? 'webhooks'
          : (AREAS as readonly string[]).includes(parts[0])
            ? (parts[0] as Area)
            : undefined;
  return area && `${area}:${level}`;
}
