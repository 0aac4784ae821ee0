/** The API's error body (ErrorResponse in the OpenAPI document). */
export interface ErrorBody {
  errorCode?: string;
  message?: string;
  requestId?: string;
  fieldErrors?: Record<string, string>;
  hint?: string;
}

/** Every error this client throws is one of these, so one `instanceof` catches them all. */
export class SupplylineError extends Error {
  /**
   * The Idempotency-Key the call sent (a POST's or PATCH's), when it failed after the client's own
   * retries: send the call again with it (`idempotencyKey`), and it cannot be done twice.
   */
  idempotencyKey: string | undefined;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SupplylineError';
  }
}

/** The server answered with a status that is not a success (after any retries). */
export class SupplylineApiError extends SupplylineError {
  readonly status: number;
  readonly errorCode: string;
  readonly fieldErrors: Record<string, string> | undefined;
  readonly requestId: string | undefined;
  readonly hint: string | undefined;
  /**
   * The answer itself (its body already read), for its headers. Not enumerable, so that logging the
   * error shows its status, code and request id rather than the whole Response.
   */
  declare readonly response: Response | undefined;

  constructor(status: number, body: ErrorBody | undefined, fallbackRequestId?: string | null, response?: Response) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'SupplylineApiError';
    this.status = status;
    this.errorCode = body?.errorCode ?? 'UNKNOWN';
    this.fieldErrors = body?.fieldErrors;
    this.requestId = body?.requestId ?? fallbackRequestId ?? undefined;
    this.hint = body?.hint;
    Object.defineProperty(this, 'response', { value: response, enumerable: false });
  }
}

/** No answer could be had: the connection failed or was cut, on every attempt. `cause` holds the last failure. */
export class SupplylineConnectionError extends SupplylineError {
  constructor(cause: unknown) {
    super(`Could not reach the Supplyline API: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'SupplylineConnectionError';
  }
}

/** The call, its retries and waits included, took longer than its `timeout`. */
export class SupplylineTimeoutError extends SupplylineError {
  readonly timeoutMs: number;
  constructor(timeoutMs: number, cause?: unknown) {
    super(`The Supplyline API did not answer within ${timeoutMs} ms`, { cause });
    this.name = 'SupplylineTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The feed cannot continue from where the caller is: `after` fell below the retained events (410),
 * or the sequence jumped. Resynchronise from an export (orders.exportThenFollow) and follow from its sequence.
 */
export class ResyncRequiredError extends SupplylineError {
  /** gone: the events after it are no longer retained; gap: one was missing; ahead: it is past the feed's latest. */
  readonly reason: 'gone' | 'gap' | 'ahead';
  readonly after: number;
  constructor(reason: 'gone' | 'gap' | 'ahead', after: number, detail: string) {
    super(
      `Event feed cannot continue after ${after} (${detail}); resynchronise from an export, then follow from its sequence`,
    );
    this.name = 'ResyncRequiredError';
    this.reason = reason;
    this.after = after;
  }
}
