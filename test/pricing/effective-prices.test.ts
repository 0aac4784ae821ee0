import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import {
  isListApplicable,
  priceEntry,
  resolveEffectivePrice,
  type EntryTerms,
  type ListTerms,
  type PricingCandidate,
  type VariantTerms,
} from '../../src/pricing/resolve.ts';

const NOW = new Date('2025-06-15T12:00:00.000Z');
const list = (over: Partial<ListTerms> = {}): ListTerms => ({
  status: 'ACTIVE',
  globalPriceFactor: '1',
  globalCostFactor: '1',
  startDate: null,
  endDate: null,
  ...over,
});
const entry = (over: Partial<EntryTerms> = {}): EntryTerms => ({
  id: 'ile_assigned',
  overrideFlatPrice: null,
  currency: null,
  ...over,
});
const variant: VariantTerms = { price: '10.00', cost: '4', currency: 'AUD' };
const defaults: PricingCandidate = { list: list(), entry: entry({ id: 'ile_default' }) };
const same = (a: string, b: string | Decimal) => new Decimal(a).equals(new Decimal(b));

describe('isListApplicable', () => {
  it('applies only ACTIVE lists', () => {
    assert.equal(isListApplicable(list(), NOW), true);
    for (const status of ['INACTIVE', 'DRAFT', 'ARCHIVED'])
      assert.equal(isListApplicable(list({ status }), NOW), false);
  });

  it('covers now with both ends inclusive', () => {
    const at = NOW.toISOString();
    assert.equal(isListApplicable(list({ startDate: at, endDate: at }), NOW), true);
    assert.equal(isListApplicable(list({ startDate: '2025-06-15T12:00:00.001Z' }), NOW), false);
    assert.equal(isListApplicable(list({ endDate: '2025-06-15T11:59:59.999Z' }), NOW), false);
    assert.equal(
      isListApplicable(list({ startDate: '2025-01-01T00:00:00Z', endDate: '2026-01-01T00:00:00+10:00' }), NOW),
      true,
    );
  });
});

describe('priceEntry', () => {
  it('uses the override when set, else price × globalPriceFactor', () => {
    assert.equal(priceEntry(variant, list({ globalPriceFactor: '1.15' }), entry()).price, '11.5');
    assert.equal(
      priceEntry(variant, list({ globalPriceFactor: '1.15' }), entry({ overrideFlatPrice: '7.25' })).price,
      '7.25',
    );
    assert.equal(priceEntry(variant, list(), entry({ overrideFlatPrice: '0' })).price, '0');
  });

  it('multiplies cost by globalCostFactor, counting a missing cost as 0', () => {
    assert.equal(priceEntry(variant, list({ globalCostFactor: '0.5' }), entry()).cost, '2');
    assert.equal(priceEntry({ ...variant, cost: null }, list({ globalCostFactor: '3' }), entry()).cost, '0');
  });

  it('uses decimal arithmetic: 0.1 × 3 is 0.3, not 0.30000000000000004', () => {
    assert.equal(priceEntry({ ...variant, price: '0.1' }, list({ globalPriceFactor: '3' }), entry()).price, '0.3');
  });

  it("rounds a factor's price and cost to the API's 6 decimals, half up, so that they can be sent back", () => {
    const priced = priceEntry(
      { ...variant, price: '3.033333', cost: '0.000001' },
      list({ globalPriceFactor: '0.123457', globalCostFactor: '0.5' }),
      entry(),
    );
    // 3.033333 × 0.123457 = 0.374486192181; 0.000001 × 0.5 = 0.0000005, half up.
    assert.equal(priced.price, '0.374486');
    assert.equal(priced.cost, '0.000001');
    assert.equal(
      priceEntry({ ...variant, price: '1.000005' }, list({ globalPriceFactor: '0.5' }), entry()).price,
      '0.500003',
    );
  });

  it('takes the entry currency, else the variant currency', () => {
    assert.equal(priceEntry(variant, list(), entry()).currency, 'AUD');
    assert.equal(priceEntry(variant, list(), entry({ currency: 'NZD' })).currency, 'NZD');
  });
});

describe('resolveEffectivePrice', () => {
  it('uses the assigned list when it applies and lists the variant', () => {
    const assigned = { list: list({ globalPriceFactor: '0.9' }), entry: entry() };
    assert.deepEqual(resolveEffectivePrice(variant, assigned, defaults, NOW), {
      entryId: 'ile_assigned',
      price: '9',
      cost: '4',
      currency: 'AUD',
    });
  });

  it('falls back to the default list when the assigned list is inactive, out of dates, or lacks the variant', () => {
    const cases: PricingCandidate[] = [
      { list: list({ status: 'INACTIVE' }), entry: entry({ overrideFlatPrice: '1' }) },
      { list: list({ endDate: '2025-01-01T00:00:00.000Z' }), entry: entry({ overrideFlatPrice: '1' }) },
      { list: list({ startDate: '2026-01-01T00:00:00.000Z' }), entry: entry({ overrideFlatPrice: '1' }) },
      { list: list({ globalPriceFactor: '2' }), entry: null },
    ];
    for (const assigned of cases) {
      assert.deepEqual(resolveEffectivePrice(variant, assigned, defaults, NOW), {
        entryId: 'ile_default',
        price: '10',
        cost: '4',
        currency: 'AUD',
      });
    }
    assert.equal(resolveEffectivePrice(variant, null, defaults, NOW)?.entryId, 'ile_default');
  });

  it('is null when no list has an entry for the variant', () => {
    assert.equal(resolveEffectivePrice(variant, null, { list: list(), entry: null }, NOW), null);
  });
});

const decimalText = (max: number, scale: number) =>
  fc.integer({ min: 0, max: max * 10 ** scale }).map((n) => new Decimal(n).dividedBy(10 ** scale).toFixed());
const positiveFactor = fc.integer({ min: 1, max: 100_000 }).map((n) => new Decimal(n).dividedBy(10_000).toFixed());
const arbVariant = fc.record({
  price: decimalText(1_000_000, 4),
  cost: fc.option(decimalText(1_000_000, 4), { nil: null }),
  currency: fc.constantFrom('AUD', 'USD', 'EUR'),
});
const arbList = fc.record({
  status: fc.constantFrom('ACTIVE', 'INACTIVE', 'DRAFT', 'ARCHIVED'),
  globalPriceFactor: positiveFactor,
  globalCostFactor: positiveFactor,
  startDate: fc.option(
    fc.integer({ min: NOW.getTime() - 1e10, max: NOW.getTime() + 1e10 }).map((t) => new Date(t).toISOString()),
    { nil: null },
  ),
  endDate: fc.option(
    fc.integer({ min: NOW.getTime() - 1e10, max: NOW.getTime() + 1e10 }).map((t) => new Date(t).toISOString()),
    { nil: null },
  ),
});
const arbEntry = fc.record({
  id: fc.constant('ile_assigned'),
  overrideFlatPrice: fc.option(decimalText(1_000_000, 2), { nil: null }),
  currency: fc.option(fc.constantFrom('AUD', 'GBP'), { nil: null }),
});

describe('resolveEffectivePrice properties', () => {
  it('an applicable list prices exactly: override, else price × factor; cost × factor', () => {
    fc.assert(
      fc.property(arbVariant, arbList, arbEntry, (v, l, e) => {
        const result = resolveEffectivePrice(v, { list: l, entry: e }, defaults, NOW)!;
        if (!isListApplicable(l, NOW)) return result.entryId === 'ile_default';
        const sixDecimals = (d: Decimal) => d.toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
        const price = e.overrideFlatPrice ?? sixDecimals(new Decimal(v.price).times(l.globalPriceFactor));
        return (
          result.entryId === 'ile_assigned' &&
          same(result.price, price) &&
          same(result.cost, sixDecimals(new Decimal(v.cost ?? 0).times(l.globalCostFactor))) &&
          result.currency === (e.currency ?? v.currency)
        );
      }),
    );
  });

  it('a list that does not apply never changes the price: the default list decides', () => {
    fc.assert(
      fc.property(arbVariant, arbList, arbEntry, (v, l, e) => {
        fc.pre(!isListApplicable(l, NOW));
        const withList = resolveEffectivePrice(v, { list: l, entry: e }, defaults, NOW);
        return JSON.stringify(withList) === JSON.stringify(resolveEffectivePrice(v, null, defaults, NOW));
      }),
    );
  });

  it("the default list (factors 1, no override) charges the variant's own price and cost", () => {
    fc.assert(
      fc.property(arbVariant, (v) => {
        const result = resolveEffectivePrice(v, null, defaults, NOW)!;
        return same(result.price, v.price) && same(result.cost, v.cost ?? '0') && result.currency === v.currency;
      }),
    );
  });

  it('prices are never negative and are plain decimal text (no exponent, no float artefacts)', () => {
    fc.assert(
      fc.property(arbVariant, arbList, arbEntry, (v, l, e) => {
        const { price, cost } = resolveEffectivePrice(v, { list: l, entry: e }, defaults, NOW)!;
        return [price, cost].every((x) => /^\d+(\.\d+)?$/.test(x));
      }),
    );
  });
});
