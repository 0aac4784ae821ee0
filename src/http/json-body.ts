import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ApiError, badRequest, validationError } from '../lib/errors.ts';

export const NUL_MESSAGE = 'Text must not contain the NUL character (\\u0000)';
export const UNSUPPORTED_MEDIA_TYPE_MESSAGE = 'Content-Type must be application/json (optionally with charset=utf-8)';
export const CONTENT_ENCODING_MESSAGE =
  'A request body with a Content-Encoding (gzip, br, …) is not taken: send it uncompressed, without that header';

/**
 * A body sent with a content coding other than `identity`, which nothing here decodes: 415, with
 * `Accept-Encoding: identity` (RFC 9110, 15.5.16). Taken as it came, it would be broken JSON, or a
 * plain body under a header that says otherwise.
 */
export function contentEncodingError(request: FastifyRequest): ApiError | null {
  const coding = request.headers['content-encoding'];
  if (coding === undefined || /^\s*(identity\s*)?$/i.test(coding)) return null;
  return new ApiError('UNSUPPORTED_MEDIA_TYPE', CONTENT_ENCODING_MESSAGE).withHeaders({
    'accept-encoding': 'identity',
  });
}
const SURROGATE_MESSAGE = 'Must be valid Unicode text: a lone UTF-16 surrogate was sent';
const NUL_FIELD_MESSAGE = 'Must not contain the NUL character (\\u0000)';
export const PROTOTYPE_KEYS_MESSAGE = 'Request body must not contain the keys __proto__ or constructor.prototype';
const EMPTY_BODY_MESSAGE = 'Request body is empty; send a JSON object';
export const NOT_JSON_MESSAGE = 'Request body is not valid JSON';
const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/**
 * Whether a Content-Type is one of `types`, any case, with at most charset=utf-8 (quoted or not).
 * Anything else, malformed or another charset, is a 415.
 */
export function utf8MediaType(types: readonly string[]): (header: unknown) => boolean {
  const names = types.map((type) => type.replace(/[./+]/g, '\\$&')).join('|');
  const pattern = new RegExp(`^\\s*(${names})\\s*(;\\s*charset\\s*=\\s*(utf-8|"utf-8")\\s*)?$`, 'i');
  return (header) => typeof header === 'string' && pattern.test(header);
}

export const isJsonMediaType = utf8MediaType(['application/json']);

// A lone surrogate or NUL can only arrive as a JSON escape, so only a body with such an escape needs the walk.
const SUSPECT_ESCAPE = /\\u(0000|[dD][89a-fA-F])/;

/**
 * The 400 for JSON `text`, parsed as `value`, that holds a string or key no backend stores as sent (a
 * NUL, a lone surrogate), or null. Its field is the path to it, less a leading `within.` (an import
 * line's `data` is the single call's body).
 */
export function unstorableTextError(text: string, value: unknown, within?: string): ApiError | null {
  const bad = SUSPECT_ESCAPE.test(text) ? findUnstorableText(value) : null;
  if (bad === null) return null;
  const path = within !== undefined && bad.path.startsWith(`${within}.`) ? bad.path.slice(within.length + 1) : bad.path;
  return validationError({ [path]: bad.problem }, bad.problem === NUL_FIELD_MESSAGE ? NUL_MESSAGE : undefined);
}

const textProblem = (text: string): string | null =>
  text.includes('\u0000') ? NUL_FIELD_MESSAGE : text.isWellFormed() ? null : SURROGATE_MESSAGE;

/**
 * The path and problem of the first string or key that cannot be stored as sent, or null. Iterative,
 * as bodies may be deep, and each value on the stack links to its parent: the path is built only for
 * a problem found (a copy of it for every value waiting on the stack grew with depth times width).
 */
export function findUnstorableText(root: unknown): { path: string; problem: string } | null {
  interface At {
    value: unknown;
    key: string | null;
    parent: At | null;
  }
  const pathOf = (at: At) => {
    const keys: string[] = [];
    for (let a: At | null = at; a !== null && a.key !== null; a = a.parent) keys.push(a.key);
    return keys.reverse().join('.') || '(root)';
  };
  // Only strings and containers can hold text.
  const holdsText = (v: unknown) => typeof v === 'string' || (v !== null && typeof v === 'object');
  const stack: At[] = [{ value: root, key: null, parent: null }];
  while (stack.length > 0) {
    const at = stack.pop()!;
    const { value } = at;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { path: pathOf(at), problem };
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++)
        if (holdsText(value[i])) stack.push({ value: value[i], key: String(i), parent: at });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, v] of Object.entries(value)) {
        const problem = textProblem(key);
        if (problem)
          return {
            path: pathOf(at),
            problem:
              problem === NUL_FIELD_MESSAGE
                ? NUL_FIELD_MESSAGE
                : 'Keys must be valid Unicode text: a lone UTF-16 surrogate was sent',
          };
        if (holdsText(v)) stack.push({ value: v, key, parent: at });
      }
    }
  }
  return null;
}

/**
 * JSON text read as a body is (an import line is one): a byte order mark before it is skipped, and a
 * key that could replace an object's prototype (`__proto__`, `constructor.prototype`) is the 400
 * of PROTOTYPE_KEYS_MESSAGE. Text that is not JSON throws a SyntaxError.
 */
export function parseJsonText(text: string): unknown {
  try {
    return sjson.parse(text, undefined, PARSE_OPTIONS);
  } catch (error) {
    if (/forbidden prototype property/.test((error as Error).message)) throw badRequest(PROTOTYPE_KEYS_MESSAGE);
    throw error;
  }
}

/**
 * The one body parser: UTF-8 JSON only. Invalid UTF-8, NUL (PostgreSQL text cannot hold it) and
 * lone surrogates (stored as U+FFFD) are refused, never changed: a write stores what it acknowledges.
 */
export function registerJsonBody(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit },
    (request: FastifyRequest, body: Buffer | string, done) => {
      const bytes = typeof body === 'string' ? Buffer.from(body) : body;
      // Many clients send Content-Type: application/json on a body-less GET or DELETE.
      if (bytes.length === 0 && (request.method === 'GET' || request.method === 'DELETE' || request.method === 'HEAD'))
        return done(null, undefined);
      if (!isJsonMediaType(request.headers['content-type']))
        return done(new ApiError('UNSUPPORTED_MEDIA_TYPE', UNSUPPORTED_MEDIA_TYPE_MESSAGE), undefined);
      const encoded = contentEncodingError(request);
      if (encoded) return done(encoded, undefined);
      if (!isUtf8(bytes)) return done(badRequest('Request body is not valid UTF-8'), undefined);
      if (bytes.length === 0) return done(badRequest(EMPTY_BODY_MESSAGE), undefined);
      const text = bytes.toString('utf8');
      let value: unknown;
      try {
        value = parseJsonText(text);
      } catch (error) {
        return done(error instanceof ApiError ? error : badRequest(NOT_JSON_MESSAGE), undefined);
      }
      // Refused on both backends rather than failing deep inside PostgreSQL.
      const refused = unstorableTextError(text, value);
      return refused === null ? done(null, value) : done(refused, undefined);
    },
  );
}
