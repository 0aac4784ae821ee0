/** How pages show times, money, counts, states and actors: the same everywhere, escaped here for `<%~ %>`. */

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const UTC = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
const EXACT = (iso: string) => `${iso.slice(0, 19).replace('T', ' ')} UTC`;

/** A `<time>` readable without script; console.js rewrites it in the viewer's zone, exact UTC in its title. */
export function when(iso: string | null | undefined, empty = '-'): string {
  if (!iso) return escapeHtml(empty);
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return escapeHtml(iso);
  const exact = at.toISOString();
  return `<time datetime="${escapeHtml(exact)}" title="${escapeHtml(EXACT(exact))}">${escapeHtml(`${UTC.format(at)} UTC`)}</time>`;
}

const digitsCache = new Map<string, number>();
/** Minor digits (JPY 0, BHD 3); 2 when Intl does not know the code. */
function minorDigits(currency: string): number {
  let digits = digitsCache.get(currency);
  if (digits === undefined) {
    try {
      digits =
        new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    } catch {
      digits = 2;
    }
    digitsCache.set(currency, digits);
  }
  return digits;
}

/** "1,234.50 AUD": at least the currency's digits plus any the amount holds, never rounded, no float. */
export function money(amount: string | number | null | undefined, currency: string): string {
  if (amount === null || amount === undefined || amount === '') return '-';
  const text = String(amount);
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) return `${text} ${currency}`;
  const digits = minorDigits(currency);
  const fraction = (match[3] ?? '').replace(/0+$/, '');
  const shown = fraction.length > digits ? fraction : fraction.padEnd(digits, '0');
  const whole = match[2].replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${match[1]}${whole}${shown ? `.${shown}` : ''} ${currency}`;
}

export const count = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

const TONES: Record<string, string> = {
  active: 'ok',
  enabled: 'ok',
  succeeded: 'ok',
  ACTIVE: 'ok',
  ACCEPTED: 'ok',
  PACKED: 'ok',
  IN_TRANSIT: 'ok',
  DELIVERED: 'ok',
  COMPLETED: 'ok',
  FINISHED: 'ok',
  paused: 'warn',
  pending: 'warn',
  queued: 'warn',
  delivering: 'warn',
  DRAFT: 'warn',
  PENDING: 'warn',
  UNASSIGNED: 'warn',
  QUEUED: 'warn',
  RUNNING: 'warn',
  ACCEPTED_WITH_CHANGES: 'warn',
  QUANTITY_CHANGED: 'warn',
  BACKORDERED: 'warn',
  SUBSTITUTED: 'warn',
  PRICE_CHANGED: 'warn',
  RESCHEDULED: 'warn',
  HELD: 'warn',
  expired: 'bad',
  revoked: 'bad',
  disabled: 'bad',
  failed: 'bad',
  cancelled: 'bad',
  CANCELLED: 'bad',
  REJECTED: 'bad',
  RETURNED: 'bad',
  STOPPED: 'bad',
  VOIDED: 'bad',
  FAILED: 'bad',
};
/** A state as a badge: its word, on a tone (ok, warn, bad, or plain) that is never the only sign. */
export const badge = (state: string) => `<span class="badge ${TONES[state] ?? 'plain'}">${escapeHtml(state)}</span>`;

/** The user's or key's name, else its kind and id. */
export function actorName(
  actor: { type: string; id: string | null; name?: string | null } | null | undefined,
  names: Map<string, string>,
): string {
  if (!actor) return 'unknown';
  const name = actor.name ?? (actor.id ? names.get(actor.id) : undefined);
  const kind = actor.type === 'api_key' ? 'key' : actor.type === 'user' ? 'user' : actor.type;
  if (name) return `${name} (${kind})`;
  return actor.id ? `${kind} ${actor.id}` : kind;
}

/** Nested lists: keys in bold code, scalars as JSON, arrays of scalars joined. */
export function tree(value: unknown): string {
  if (
    value === null ||
    value === undefined ||
    (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0)
  ) {
    return '<p class="muted">None.</p>';
  }
  const node = (v: unknown): string => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      return `<ul>${Object.entries(v)
        .map(([k, c]) => `<li><code>${escapeHtml(k)}</code>: ${node(c)}</li>`)
        .join('')}</ul>`;
    }
    if (Array.isArray(v) && v.some((c) => c !== null && typeof c === 'object')) {
      return `<ul>${v.map((c, i) => `<li><code>[${i}]</code>: ${node(c)}</li>`).join('')}</ul>`;
    }
    return escapeHtml(typeof v === 'string' ? v : JSON.stringify(v));
  };
  return `<ul class="tree">${Object.entries(value as Record<string, unknown>)
    .map(([k, c]) => `<li><code>${escapeHtml(k)}</code>: ${node(c)}</li>`)
    .join('')}</ul>`;
}
export const FORMAT = { when, money, count, badge, actorName, tree };
