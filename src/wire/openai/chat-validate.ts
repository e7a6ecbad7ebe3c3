// Validation helpers of the Chat Completions request parser (chat-request.ts, chat-tools.ts): every malformed field
// is a TOLLGATE_ERR_INVALID_REQUEST naming its path in `param`.

import { TollgateError } from '../../core/errors.js';

export type Json = Record<string, unknown>;

export function invalid(param: string, message: string): TollgateError {
  return new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, { param });
}

export const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
/** null and undefined both mean "not given" in the OpenAI API. */
export const absent = (v: unknown): v is null | undefined => v === null || v === undefined;

export function optNumber(b: Json, key: string): number | undefined {
  const v = b[key];
  if (absent(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(key, `'${key}' must be a number`);
  return v;
}

export function optInt(b: Json, key: string, min: number): number | undefined {
  const v = optNumber(b, key);
  if (v !== undefined && (!Number.isInteger(v) || v < min)) throw invalid(key, `'${key}' must be an integer >= ${min}`);
  return v;
}

export function optString(v: unknown, param: string): string | undefined {
  if (absent(v)) return undefined;
  if (typeof v !== 'string') throw invalid(param, `'${param}' must be a string`);
  return v;
}

export function reqString(v: unknown, param: string): string {
  if (typeof v !== 'string') throw invalid(param, `'${param}' must be a string`);
  return v;
}
