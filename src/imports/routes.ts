import { Type } from 'typebox';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { invalidKey, KEY_PATTERN } from '../http/write.ts';
import { ApiError, notFound } from '../lib/errors.ts';
import { contentEncodingError, utf8MediaType } from '../http/json-body.ts';
import { receiveImport } from './service.ts';
import { findImport, IMPORT_NOT_FOUND, listImports, toImport, type ImportRow } from './repository.ts';
import { resultsStream } from './results.ts';
import { CreateImportQuery, ImportPage, ImportParams, ImportResponse, ListImportsQuery } from './schema.ts';

const tags = ['Imports'];
const NDJSON_TYPES = ['application/x-ndjson', 'application/jsonl'];
/** The file is read as UTF-8: another charset is refused, not misread line by line. */
const isNdjsonMediaType = utf8MediaType(NDJSON_TYPES);

export interface ImportRouteDeps extends RouteDeps {
  clock: () => number;
  /** IMPORT_MAX_BYTES */
  maxBytes: number;
  /** Wakes this instance's import worker. */
  kick(): void;
}

/**
 * Bulk imports (docs/decisions/0044-bulk-import.md): a file of NDJSON lines, each a create or patch
 * of an item, buyer, price list, order, invoice, acknowledgement or shipment, received whole and then applied line by line by
 * the instances' import workers (src/imports/worker.ts).
 */
export async function importRoutes(app: ApiInstance, deps: ImportRouteDeps): Promise<void> {
  const { db, clock } = deps;
  // The file is read by the route as it arrives, never parsed into memory by Fastify.
  app.addContentTypeParser(NDJSON_TYPES, (_request, _payload, done) => done(null, undefined));
  // Nor is any other type parsed as JSON here: the route refuses it, naming the type it takes.
  app.removeContentTypeParser('*');
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  const answer = (row: ImportRow) => toImport(row, clock());

  app.post(
    '/imports',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'createImport',
        summary:
          'Import a file of records: items, buyers, price lists, orders, invoices, acknowledgements and shipments',
        description:
          'The body is NDJSON (Content-Type: application/x-ndjson), up to IMPORT_MAX_BYTES (1 GB by default). Each line is ' +
          '{"op": "create" | "patch" | "upsert", "resource": "item" | "buyer" | "price_list" | "order" | "invoice" | "acknowledgement" | ' +
          '"shipment", "ref": "<your key for the line>", "id": "<the record, for patch>", ' +
          '"buyerId": "<the buyer, for an order create>", ' +
          '"orderId": "<the order, for an acknowledgement or shipment create>", "data": {<the body the single call takes>}}. ' +
          'Anywhere in data, and as id, buyerId or orderId, {"$ref": "<an earlier line\'s ref>"} ' +
          'names the record that line made or patched, and {"$ref": "<an item line\'s ref>", "variant": 0} its first variant. ' +
          'Answers 202 once the whole file is received; the ' +
          'lines are then applied in order, each exactly once, in the background (GET /api/v1/imports/{id} shows progress, ' +
          "/results each line's outcome). The same Idempotency-Key with the same file answers the same import.",
        querystring: CreateImportQuery,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({ description: 'Sending the same file again under it answers the same import' }),
          ),
        }),
        response: { 202: ImportResponse },
      },
    },
    async (request, reply) => {
      if (!isNdjsonMediaType(request.headers['content-type']))
        throw new ApiError(
          'UNSUPPORTED_MEDIA_TYPE',
          'Content-Type must be application/x-ndjson or application/jsonl, in UTF-8',
        );
      const encoded = contentEncodingError(request);
      if (encoded) throw encoded;
      const key = request.headers['idempotency-key'];
      if (key !== undefined && (typeof key !== 'string' || !KEY_PATTERN.test(key))) throw invalidKey();
      const { imp, replayed } = await receiveImport(db, {
        businessId: request.businessId,
        actorId: request.apiKeyId,
        scopes: request.apiKeyScopes,
        idempotencyKey: key ?? null,
        options: { dryRun: request.query.dryRun ?? false, onError: request.query.onError ?? 'continue' },
        body: request.raw,
        now: new Date(clock()).toISOString(),
        maxBytes: deps.maxBytes,
      });
      if (replayed) reply.header('idempotent-replayed', 'true');
      else deps.kick();
      return reply.code(202).header('location', `/api/v1/imports/${imp.id}`).send(answer(imp));
    },
  );

  app.get(
    '/imports',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listImports',
        summary: 'List imports, newest first',
        querystring: ListImportsQuery,
        response: { 200: ImportPage },
      },
    },
    async (request) =>
      deps.cursors.list(request, 'imports', (paging) => listImports(db, request.businessId, paging, clock())),
  );

  app.get(
    '/imports/:id',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'getImport',
        summary: "An import's state and progress",
        params: ImportParams,
        response: { 200: ImportResponse },
      },
    },
    async (request) => {
      const row = await findImport(db, request.businessId, request.params.id);
      if (!row) throw notFound(IMPORT_NOT_FOUND);
      return answer(row);
    },
  );

  app.get(
    '/imports/:id/results',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'getImportResults',
        summary: "Each line's outcome, as NDJSON (kept 30 days)",
        description:
          'One JSON object per line done, in line order: {"line", "ref", "outcome": "created" | "updated" | "unchanged" | ' +
          '"failed", "id": the record, "variantIds" for an item line, or "error": {"errorCode", "message", "fieldErrors"} as the ' +
          'single call answers}. Blank lines have none. While the import runs, it holds the lines done so far.',
        params: ImportParams,
        response: {
          200: {
            description: 'One result per line (application/x-ndjson)',
            content: { 'application/x-ndjson': { schema: Type.String({ description: 'Newline-delimited JSON' }) } },
          },
        },
      },
    },
    async (request, reply) => {
      const row = await findImport(db, request.businessId, request.params.id);
      if (!row) throw notFound(IMPORT_NOT_FOUND);
      return reply.type('application/x-ndjson; charset=utf-8').send(resultsStream(db, row.id) as never);
    },
  );
}
