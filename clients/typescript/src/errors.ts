/** The API's error body (ErrorResponse in the OpenAPI document). */
export interface ErrorBody {
  errorCode?: string;
  message?: string;
  requestId?: string;
  fieldErrors?: Record<string, string>;
  hint?: string;
}

/** The one error the client throws for an answer that is not a success. */
export class SupplylineError extends Error {
  readonly status: number;
  readonly errorCode: string;
  readonly fieldErrors: Record<string, string> | undefined;
  readonly requestId: string | undefined;
  readonly hint: string | undefined;

  constructor(status: number, body: ErrorBody | undefined, fallbackRequestId?: string | null) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'SupplylineError';
    this.status = status;
    this.errorCode = body?.errorCode ?? 'UNKNOWN';
    this.fieldErrors = body?.fieldErrors;
    this.requestId = body?.requestId ?? fallbackRequestId ?? undefined;
    this.hint = body?.hint;
  }
}

/**
 * The feed cannot continue from where the caller is: `after` fell below the retained events (410),
 * or the sequence jumped. Resynchronise from an export (orders.exportThenFollow) and follow from its sequence.
 */
export class ResyncRequiredError extends Error {
  readonly reason: 'gone' | 'gap';
  readonly after: number;
  constructor(reason: 'gone' | 'gap', after: number, detail: string) {
    super(`Event feed cannot continue after ${after} (${detail}); resynchronise from an export, then follow from its sequence`);
    this.name = 'ResyncRequiredError';
    this.reason = reason;
    this.after = after;
  }
}
