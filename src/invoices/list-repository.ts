import { applyListFilters, fetchPage, type ListFilters, type Page, type Paging } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { toInvoice } from './mapper.ts';
import { loadInvoiceLineItems } from './repository.ts';
import type { Invoice } from './schema.ts';

export type ListInvoicesOptions = ListFilters & Paging;

/** A page of invoices with their line items: three queries (count, page, line items), as for orders. */
export async function listInvoices(db: Db, businessId: string, options: ListInvoicesOptions): Promise<Page<Invoice>> {
  const query = applyListFilters(db, db.selectFrom('invoices').where('business_id', '=', businessId), options);
  return fetchPage(query.selectAll(), options, async (rows) => {
    const lines = await loadInvoiceLineItems(
      db,
      businessId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => toInvoice(r, lines.get(r.id) ?? []));
  });
}
