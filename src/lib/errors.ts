export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  GONE: 410,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_IN_USE: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  REQUEST_TIMEOUT: 408,
  EXPECTATION_FAILED: 417,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type FieldErrors = Record<string, string>;

/** The one error type, turned into HTTP once, by the error handler. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly fieldErrors?: FieldErrors;
  /** What to do about it, where the message alone leaves a newcomer guessing. */
  readonly hint?: string;
  /** Response headers that belong to this answer (a 415's `Accept-Encoding`), set by the error handler. */
  headers?: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, fieldErrors?: FieldErrors, hint?: string) {
    super(message);
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.fieldErrors = fieldErrors;
    this.hint = hint;
  }

  /** This error, answered with these headers too. */
  withHeaders(headers: Readonly<Record<string, string>>): this {
    this.headers = headers;
    return this;
  }
}

export const VALIDATION_MESSAGE = 'Validation failed. Please review the highlighted fields.';

const MAX_FIELD_ERRORS = 50;

/** Enough to fix a request, never a response larger than the request. */
export const validationError = (fieldErrors: FieldErrors, message = VALIDATION_MESSAGE) =>
  new ApiError('VALIDATION_ERROR', message, Object.fromEntries(Object.entries(fieldErrors).slice(0, MAX_FIELD_ERRORS)));
export const badRequest = (message: string) => new ApiError('VALIDATION_ERROR', message);
export const notFound = (message: string) => new ApiError('NOT_FOUND', message);
export const conflict = (message: string) => new ApiError('CONFLICT', message);
/** "Live" is not said of the key: a sandbox's test keys are as good on their sandbox. */
export const UNAUTHORIZED_HINT =
  'Send the X-Business-Id of your business or sandbox and the X-API-Key of one of its keys that is not revoked or expired';
export const unauthorized = (hint = UNAUTHORIZED_HINT) => new ApiError('UNAUTHORIZED', 'Unauthorized', undefined, hint);
export const MALFORMED_KEY_HINT =
  'The X-API-Key is malformed (a typo?): a key is sl_live_ (or sl_test_ for a sandbox) and 36 letters and digits, ' +
  'the last 6 a checksum of the others, so one wrong character shows; or 32 hex characters for keys made before 2026-11-28';
export const TEST_KEY_ON_LIVE_HINT =
  'A test key (sl_test_) works only on its sandbox, and this business is live: ' +
  "use a live key (sl_live_), or send the sandbox's id in X-Business-Id";
export const LIVE_KEY_ON_SANDBOX_HINT =
  "A live key (sl_live_) works only on a live business, and this business is a sandbox: use one of the sandbox's test keys (sl_test_)";
/** The message names the scope the key lacks. */
export const forbidden = (message: string) => new ApiError('FORBIDDEN', message);
export const SERVICE_UNAVAILABLE_MESSAGE = 'The service is briefly unavailable. Please retry shortly.';
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;
export const preconditionFailed = (message: string) => new ApiError('PRECONDITION_FAILED', message);

export const RATE_LIMITED_MESSAGE = "You're sending requests too quickly. Please try again shortly.";

export interface ErrorBody {
  errorCode: ErrorCode;
  message: string;
  error: string;
  requestId: string;
  fieldErrors?: FieldErrors;
  hint?: string;
}

export function errorBody(error: ApiError, requestId: string): ErrorBody {
  const body: ErrorBody = { errorCode: error.code, message: error.message, error: error.message, requestId };
  if (error.fieldErrors) body.fieldErrors = error.fieldErrors;
  if (error.hint) body.hint = error.hint;
  return body;
}
