import { Decimal } from 'decimal.js';

const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN });

export type DecimalInput = string | number;

/** Canonical decimal text: a JSON number's shortest exact decimal, never a float artefact. */
export function toDecimalString(value: DecimalInput): string {
  return new D(typeof value === 'number' ? String(value) : value).toFixed();
}

/** Decimal text from storage as a JSON number, for fields the reference returns as numbers. */
export function toNumber(value: string | number | null): number | null {
  if (value === null) return null;
  return typeof value === 'number' ? value : Number(value);
}

export function multiply(a: DecimalInput, b: DecimalInput): string {
  return new D(String(a)).times(new D(String(b))).toFixed();
}

/** The decimals a price or cost has in the API (the schemas' `Money`). */
export const MONEY_SCALE = 6;

/** A computed price or cost at the API's scale, half up: one a client can send back as it reads it. */
export function roundMoney(value: DecimalInput): string {
  return new D(String(value)).toDecimalPlaces(MONEY_SCALE, D.ROUND_HALF_UP).toFixed();
}

export function sum(values: DecimalInput[]): string {
  return values.reduce<Decimal>((acc, v) => acc.plus(new D(String(v))), new D(0)).toFixed();
}

/** Text decimal.js's toFixed() gives back unchanged: no exponent, no leading or trailing zeros, no -0. */
const PLAIN_DECIMAL = /^(-?(0|[1-9]\d*)\.\d*[1-9]|-?[1-9]\d*|0)$/;

/** At least two decimals ("12.5" -> "12.50"), keeping extra precision. */
export function formatAmount(value: DecimalInput): string {
  if (typeof value === 'string' && PLAIN_DECIMAL.test(value)) {
    const point = value.indexOf('.');
    if (point === -1) return `${value}.00`;
    return value.length - point === 2 ? `${value}0` : value;
  }
  const d = new D(String(value));
  return d.decimalPlaces() < 2 ? d.toFixed(2) : d.toFixed();
}
