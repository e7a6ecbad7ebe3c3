// Small helpers for reading untrusted JSON, shared by the Anthropic codec's files.

import { TollgateError } from '../../core/errors.js';

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A client request the gateway must refuse. */
export function invalid(message: string, param: string): never {
  throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, { param });
}

/** An upstream answer that is not what the Messages API promises. */
export function protocol(message: string): never {
  throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', message);
}

/** Tool-call arguments (JSON text) as the object Anthropic's `input` must be; text that is not a JSON object -> {}. */
export function argumentsObject(args: string): Json {
  if (args.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}
