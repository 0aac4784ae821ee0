import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import { DEMO_DEFAULTS, generateDemo } from './generate.ts';
import { createProgress } from './progress.ts';

type Values = Record<string, string | boolean | undefined>;

export const DEMO_OPTIONS = {
  orders: { type: 'string' },
  items: { type: 'string' },
  buyers: { type: 'string' },
  json: { type: 'boolean' },
} as const;

function count(
  values: Values,
  name: 'orders' | 'items' | 'buyers',
  min: number,
  usage: (message: string) => Error,
): number {
  const raw = values[name];
  if (raw === undefined) return DEMO_DEFAULTS[name];
  const text = String(raw).replace(/_/g, '');
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > 100_000_000) {
    throw usage(`--${name} must be a whole number from ${min} to 100000000`);
  }
  return Number(text);
}

/** `demo`: a new business full of realistic data. With --json, the last stdout line is its credentials. */
export async function runDemoCommand(
  db: Kysely<Database>,
  values: Values,
  usage: (message: string) => Error,
): Promise<void> {
  const orders = count(values, 'orders', 0, usage);
  const items = count(values, 'items', 1, usage);
  const buyers = count(values, 'buyers', 1, usage);
  const progress = createProgress('orders', orders);
  const result = await generateDemo(db, { orders, items, buyers, onProgress: (done) => progress.update(done) });
  progress.finish();
  const summary = [
    `Created demo business ${result.businessId}: ${result.items} items (${result.variants} variants), ` +
      `${result.buyers} buyers, 3 price lists,`,
    `${result.orders.toLocaleString('en')} orders with ${result.orderItems.toLocaleString('en')} order items ` +
      `and ${result.shipments.toLocaleString('en')} shipments.`,
    `Orders, with their items and ${result.events.toLocaleString('en')} events, took ${result.orderSeconds.toFixed(2)} s ` +
      `(${result.ordersPerSecond.toLocaleString('en')} orders/s); ${result.totalSeconds.toFixed(2)} s in all.`,
  ];
  if (values.json) {
    process.stderr.write(`${summary.join('\n')}\n`);
    process.stdout.write(`${JSON.stringify({ businessId: result.businessId, apiKey: result.apiKey })}\n`);
    return;
  }
  process.stdout.write(
    [
      ...summary,
      'The API key is shown only this once:',
      `  X-Business-Id: ${result.businessId}`,
      `  X-API-Key:     ${result.apiKey}`,
      '',
    ].join('\n'),
  );
}
