// Error types in Anthropic's shape (`{type: 'error', error: {type, message}}`), for errors told to an Anthropic client.

import { ERRORS, type ErrorCode } from '../../core/errors.js';

/** The error types Anthropic documents (HTTP 400, 401, 402, 403, 404, 413, 429, 500, 504, 529). */
const TYPES = new Set([
  'invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error',
  'request_too_large', 'rate_limit_error', 'api_error', 'timeout_error', 'overloaded_error',
]);

const BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error',
  404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 504: 'timeout_error', 529: 'overloaded_error',
};

/** An Anthropic error type for a code: an Anthropic type as is, a TOLLGATE_ERR_* code by its HTTP status, else api_error. */
export function anthropicErrorType(code: string): string {
  if (TYPES.has(code)) return code;
  if (Object.hasOwn(ERRORS, code)) return BY_STATUS[ERRORS[code as ErrorCode].status] ?? 'api_error';
  if (/rate.?limit/i.test(code)) return 'rate_limit_error';
  if (/overload/i.test(code)) return 'overloaded_error';
  return 'api_error';
}

export function errorBody(code: string, message: string): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicErrorType(code), message } };
}
