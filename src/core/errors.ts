// Every error the gateway itself returns, in one table: a stable code, its HTTP status, the OpenAI-style
// `type` that SDKs read, and the level it is logged at (5xx at error, 4xx at info). The JSON shape is
// documented in docs/errors.md and produced only by `errorBody`.

export type LogLevel = 'info' | 'warn' | 'error';

interface ErrorDef {
  readonly status: number;
  readonly type: string;
  readonly level: LogLevel;
}

export const ERRORS = {
  TOLLGATE_ERR_UNAUTHORIZED: { status: 401, type: 'authentication_error', level: 'info' },
  TOLLGATE_ERR_FORBIDDEN: { status: 403, type: 'permission_error', level: 'info' },
  TOLLGATE_ERR_REAUTH_REQUIRED: { status: 401, type: 'authentication_error', level: 'info' },
  TOLLGATE_ERR_RATE_LIMITED: { status: 429, type: 'rate_limit_error', level: 'info' },
  TOLLGATE_ERR_BAD_REQUEST: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_HEADERS_TOO_LARGE: { status: 431, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_INVALID_JSON: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_INVALID_REQUEST: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_INVALID_PERIOD: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_INVALID_QUERY: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_CONFIG_CONFLICT: { status: 409, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_PRECONDITION_FAILED: { status: 412, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_NOT_FOUND: { status: 404, type: 'not_found_error', level: 'info' },
  TOLLGATE_ERR_MODEL_NOT_FOUND: { status: 404, type: 'not_found_error', level: 'info' },
  TOLLGATE_ERR_NOT_SUPPORTED: { status: 400, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_BODY_TOO_LARGE: { status: 413, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_RANGE_NOT_SATISFIABLE: { status: 416, type: 'invalid_request_error', level: 'info' },
  TOLLGATE_ERR_INTERNAL: { status: 500, type: 'server_error', level: 'error' },
  TOLLGATE_ERR_UPSTREAM_CONNECT: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_UPSTREAM_PROTOCOL: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_UPSTREAM_TOO_LARGE: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_STORE_UNAVAILABLE: { status: 503, type: 'server_error', level: 'error' },
  TOLLGATE_ERR_NO_MEMBER_AVAILABLE: { status: 503, type: 'upstream_error', level: 'warn' },
  TOLLGATE_ERR_PROVIDER_AUTH: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_TOKEN_REFRESH_FAILED: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_FUSION_NO_ANSWER: { status: 502, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_UPSTREAM_TIMEOUT: { status: 504, type: 'upstream_error', level: 'error' },
  TOLLGATE_ERR_UPSTREAM_STALL: { status: 504, type: 'upstream_error', level: 'error' },
} as const satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof ERRORS;

/** An error the gateway raises on purpose. Its code decides status, type and log level. */
export class TollgateError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly level: LogLevel;
  readonly param: string | undefined;

  constructor(code: ErrorCode, message: string, opts: { param?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TollgateError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.type = ERRORS[code].type;
    this.level = ERRORS[code].level;
    this.param = opts.param;
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; type: string; param: string | null; request_id: string | null };
}

/** The one JSON shape of every gateway error (OpenAI-compatible: SDKs read `error.message`). */
export function errorBody(err: TollgateError, requestId: string | null): ErrorBody {
  return { error: { code: err.code, message: err.message, type: err.type, param: err.param ?? null, request_id: requestId } };
}

/** Map anything thrown inside a route to a TollgateError; fastify's own errors keep their meaning. */
export function toTollgateError(err: unknown): TollgateError {
  if (err instanceof TollgateError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string; validation?: unknown };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TollgateError('TOLLGATE_ERR_BODY_TOO_LARGE', 'request body is larger than the configured limit');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new TollgateError('TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE', 'request body must be application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'the request body is not as long as its content-length says');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TollgateError('TOLLGATE_ERR_INVALID_JSON', 'request body is empty; a JSON object is expected');
    case 'FST_ERR_BAD_URL':
      return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'the request URL is not valid: it has a malformed percent-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'a path parameter of the request URL is too long');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new TollgateError('TOLLGATE_ERR_INVALID_JSON', `request body is not valid JSON: ${e.message ?? ''}`);
    default:
      break;
  }
  if (e?.validation !== undefined) {
    return new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', e.message ?? 'invalid request');
  }
  if (err instanceof SyntaxError && typeof e.statusCode === 'number' && e.statusCode === 400) {
    return new TollgateError('TOLLGATE_ERR_INVALID_JSON', `request body is not valid JSON: ${err.message}`);
  }
  return new TollgateError('TOLLGATE_ERR_INTERNAL', 'internal error', { cause: err });
}
