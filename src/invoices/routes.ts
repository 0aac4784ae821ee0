import { Type } from 'typebox';
import { notFound } from '../lib/errors.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { registerExport } from '../http/export.ts';
import { exportInvoices } from './repository.ts';
import { markDeprecated } from '../http/deprecation.ts';

/** Invoices' includeDeleted, deprecated in this release (CHANGELOG.md). */
const INCLUDE_DELETED_INVOICES = { since: '2026-11-28', sunset: '2027-06-30' };
import { parseDateTime } from '../lib/time.ts';
import { etagOf, parseIfMatch } from '../http/etag.ts';
import { listInvoices } from './list-repository.ts';
import { findInvoice } from './repository.ts';
import {
  CreateInvoiceBody,
  InvoiceListResponse,
  InvoiceParams,
  InvoiceResponse,
  ListInvoicesQuery,
  UpdateInvoiceBody,
} from './schema.ts';
import { createInvoice, INVOICE_NOT_FOUND, patchInvoice } from './service.ts';

const tags = ['Invoices'];
const ref = (description: string) => Type.Unsafe<unknown>({ $ref: 'ErrorResponse#', description });
/** The reference's artefact flag is a property filter on a fixed path; an explicit propertyPath wins. */
const ARTEFACT_PATH = ['invoiceArtefact'];

export async function invoiceRoutes(app: ApiInstance, { db, runWrite, cursors, openSnapshot }: RouteDeps) {
  registerExport(app, openSnapshot, { path: 'invoices', tag: 'Invoices', noun: 'invoice', batch: exportInvoices });

  app.post(
    '/invoices',
    {
      config: { extension: true, etag: true, namesOther: true },
      schema: {
        tags,
        operationId: 'createInvoice',
        summary: 'Invoice an order: its items become line items',
        description:
          'One live invoice per order: a second gives 409 unless the first is VOIDED or deleted. ' +
          'The invoice starts as DRAFT with the next INV-000001 style number.',
        body: CreateInvoiceBody,
        response: {
          201: InvoiceResponse,
          409: ref(
            'What the invoice would bill has a live invoice already (the order, or the shipment), or the Idempotency-Key is in use',
          ),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource } = await createInvoice(ctx, request.body);
        return { status: 201, body: resource, headers: { etag: etagOf(resource.version) } };
      }),
  );

  app.get(
    '/invoices',
    {
      schema: {
        tags,
        operationId: 'listInvoices',
        summary: 'List invoices with their line items, newest first',
        description:
          'Examples: `?hasArtefact=false` (invoices without a generated document), `?status=AUTHORISED`, ' +
          '`?propertyPath=xero.invoiceId&propertyExists=false` (not yet synced). propertyPath takes precedence over hasArtefact. ' +
          'Status DELETED is a status like the others (filter with status=DELETED); invoices have no soft delete in the API. ' +
          'includeDeleted is deprecated (CHANGELOG.md): still taken, answered with Deprecation and Sunset headers.',
        querystring: ListInvoicesQuery,
        response: { 200: InvoiceListResponse },
      },
    },
    async (request, reply) => {
      const { query } = request;
      if (query.includeDeleted !== undefined) markDeprecated(reply, INCLUDE_DELETED_INVOICES);
      const property =
        readPropertyFilter(query) ??
        (query.hasArtefact === undefined ? null : { segments: ARTEFACT_PATH, exists: query.hasArtefact });
      return cursors.list(request, 'invoices', (paging) =>
        listInvoices(db, request.businessId, {
          ...paging,
          // Invoices are never soft-deleted through the API; a row an operator marked deleted stays out unless asked for, as before.
          includeDeleted: query.includeDeleted === true,
          createdSince: query.createdSince === undefined ? undefined : parseDateTime(query.createdSince),
          status: query.status,
          property,
        }),
      );
    },
  );

  app.get(
    '/invoices/:id',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'getInvoice',
        summary: 'Get an invoice with its line items',
        params: InvoiceParams,
        response: { 200: InvoiceResponse },
      },
    },
    async (request, reply) => {
      const invoice = await findInvoice(db, request.businessId, request.params.id);
      if (!invoice) throw notFound(INVOICE_NOT_FOUND);
      return reply.header('etag', etagOf(invoice.version)).send(invoice);
    },
  );

  app.patch(
    '/invoices/:id',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'updateInvoice',
        summary: "Update an invoice's status, reference, notes, due date or properties",
        description:
          'Status moves freely between the reference values and never changes the order. properties are deep-merged.',
        params: InvoiceParams,
        body: UpdateInvoiceBody,
        headers: Type.Object({
          'if-match': Type.Optional(
            Type.String({ maxLength: 200, description: 'The ETag last read ("<version>"); a stale one gives 412' }),
          ),
        }),
        response: {
          200: InvoiceResponse,
          409: ref('Un-voiding would give the order a second live invoice, or the Idempotency-Key is in use'),
          412: ref('If-Match named a version that is no longer current; nothing was changed'),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource } = await patchInvoice(
          ctx,
          request.params.id,
          request.body,
          parseIfMatch(request.headers['if-match']),
        );
        return { status: 200, body: resource, headers: { etag: etagOf(resource.version) } };
      }),
  );
}
