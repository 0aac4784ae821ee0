import pg from 'pg';

const { escapeLiteral } = pg;

/*
 * Values written into PostgreSQL SQL text, for the simple protocol, which takes several statements
 * in one message (pg-prepared.ts, pg-call.ts). Each is a quoted literal of unknown type holding the
 * text a parameter would carry, so that PostgreSQL gives it the statement's parameter type (or the
 * function argument's) exactly as it does a parameter.
 */

/** A value as PostgreSQL reads a parameter in text form; undefined for anything but text, numbers, booleans, null, Buffers (bytea) and flat arrays of these. */
function parameterText(value: unknown, inArray = false): string | null | undefined {
  if (value === null || value === undefined) return inArray ? 'NULL' : null;
  // bytea's hex input form, as text.
  if (Buffer.isBuffer(value)) return parameterText(`\\x${value.toString('hex')}`, inArray);
  // A NUL cannot travel in a simple-protocol message (PostgreSQL reads the message as broken): such text goes as a parameter.
  if (typeof value === 'string' && value.includes('\u0000')) return undefined;
  if (typeof value === 'string') return inArray ? `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : value;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && !inArray) {
    const elements = value.map((v) => parameterText(v, true));
    return elements.includes(undefined) ? undefined : `{${elements.join(',')}}`;
  }
  return undefined;
}

/**
 * A parameter as a quoted literal of unknown type, holding the text node-postgres would send for
 * it, so that PostgreSQL gives it the statement's parameter type in the same way; undefined for a
 * value of another kind, which then goes the usual way.
 */
function parameterLiteral(value: unknown): string | undefined {
  const text = parameterText(value);
  return text === undefined ? undefined : text === null ? 'null' : escapeLiteral(text);
}

/**
 * A builder-made statement with its parameters written in: each `$n` outside a quoted identifier
 * becomes the n-th literal. Undefined for text this cannot read safely: string literals, comments,
 * dollar quotes, several statements, or a placeholder without its value.
 */
export function writtenOut(text: string, written: string[]): string | undefined {
  let out = '';
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '"') {
      // A quoted identifier, with "" for a quote inside it: copied as it is.
      let end = i + 1;
      for (;;) {
        end = text.indexOf('"', end);
        if (end === -1) return undefined;
        if (text[end + 1] !== '"') break;
        end += 2;
      }
      out += text.slice(i, end + 1);
      i = end + 1;
    } else if (c === '$') {
      const digits = /^\d+/.exec(text.slice(i + 1))?.[0];
      if (digits === undefined) return undefined;
      const value = written[Number(digits) - 1];
      if (value === undefined) return undefined;
      out += value;
      i += 1 + digits.length;
    } else if (c === "'" || c === ';' || (c === '-' && text[i + 1] === '-') || (c === '/' && text[i + 1] === '*')) {
      return undefined;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

export function literals(values: readonly unknown[]): string[] | undefined {
  const all = values.map(parameterLiteral);
  return all.includes(undefined) ? undefined : all as string[];
}
