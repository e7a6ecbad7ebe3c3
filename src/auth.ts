// Keys from server.api_keys on /v1/*, /v1beta/* and /api/*, presented the way each SDK sends them: OpenAI's
// `Authorization: Bearer`, Anthropic's `x-api-key`, Gemini's `x-goog-api-key` or `?key=`. Keys are compared as
// SHA-256 digests in constant time;
// the request carries only the key's name from here on (never the key). With no keys configured (loopback only,
// enforced by config validation) every request is let through as 'anonymous'.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ApiKey } from './config/types.js';
import { TollgateError } from './errors.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export const ANONYMOUS = 'anonymous';

export class KeyRing {
  readonly #keys: readonly { name: string; digest: Buffer }[];
  constructor(keys: readonly ApiKey[]) {
    this.#keys = keys.map((k) => ({ name: k.name, digest: digest(k.key) }));
  }

  get open(): boolean {
    return this.#keys.length === 0;
  }

  /** The name of the key presented, or throws TOLLGATE_ERR_UNAUTHORIZED. */
  authenticate(headers: IncomingHttpHeaders, url = ''): string {
    if (this.open) return ANONYMOUS;
    const presented = presentedKey(headers, url);
    if (presented === null) {
      throw new TollgateError('TOLLGATE_ERR_UNAUTHORIZED', 'missing API key: send Authorization: Bearer <key> (or x-api-key, x-goog-api-key)');
    }
    const d = digest(presented);
    for (const k of this.#keys) if (timingSafeEqual(d, k.digest)) return k.name;
    throw new TollgateError('TOLLGATE_ERR_UNAUTHORIZED', 'invalid API key');
  }
}

/** The key in the first place an SDK puts one: Bearer, x-api-key, x-goog-api-key, then the `key` query parameter. */
export function presentedKey(headers: IncomingHttpHeaders, url: string): string | null {
  const b = bearer(headers.authorization);
  if (b !== null) return b;
  for (const h of ['x-api-key', 'x-goog-api-key'] as const) {
    const v = headers[h];
    if (typeof v === 'string' && v.trim() !== '') return v.trim();
  }
  const q = url.indexOf('?');
  if (q !== -1) {
    const key = new URLSearchParams(url.slice(q + 1)).get('key');
    if (key) return key;
  }
  return null;
}

function bearer(h: string | undefined): string | null {
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}
