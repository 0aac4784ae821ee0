import type { FastifyReply } from 'fastify';
import type { TSchema } from 'typebox';
import type { Page } from '../db/list.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

// JSON rendered with the route's own serializer is the body the type provider expects, already serialised.
type AnyReply = Pick<FastifyReply, 'serializeInput' | 'type' | 'send'>;

/** The exact text Fastify would send for the value. */
export function serializerOf<T>(reply: unknown, schema: TSchema): (value: T) => string {
  return (value) =>
    (reply as AnyReply).serializeInput(value as Record<string, unknown>, schema as unknown as Record<string, unknown>);
}

export function sendRendered(reply: unknown, json: Buffer): FastifyReply {
  return (reply as AnyReply).type(JSON_TYPE).send(json);
}

const COMMA = Buffer.from(',');

/** The list envelope around rendered items, in ListEnvelope's order. */
export function pageJson(page: Omit<Page<Buffer>, 'next'>, nextCursor: string | null): Buffer {
  const parts: Buffer[] = [Buffer.from('{"items":[')];
  page.items.forEach((item, i) => {
    parts.push(...(i === 0 ? [item] : [COMMA, item]));
  });
  parts.push(
    Buffer.from(
      `],"total":${page.total},"page":${page.page},"pageSize":${page.pageSize},"nextCursor":${JSON.stringify(nextCursor)}}`,
    ),
  );
  return Buffer.concat(parts);
}
