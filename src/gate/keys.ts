// Gateway keys from server.api_keys, presented the way each SDK sends them: OpenAI's `Authorization: Bearer`,
// Anthropic's `x-api-key`, Gemini's `x-goog-api-key` or `?key=`. Keys are compared as SHA-256 digests in constant
// time; from here on a request carries only the key's name and role (never the key). With no keys configured
// (loopback only, enforced by config validation) the ring is open.

import * as crypto from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ApiKey, KeyRole } from '../config/types.js';

// One-shot hashing where Node has it (20.12 and later: no Hash object a request), the same digest as a Hash's. Looked
// up on the module, since a named import of it would fail to link on an earlier Node 20 (package.json: node >= 20).
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const digest = oneShot !== undefined ? (s: string): Buffer => oneShot('sha256', s, 'buffer') : (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

export const ANONYMOUS = 'anonymous';

export interface KeyIdentity {
  readonly name: string;
  readonly role: KeyRole;
  /**
   * What a re-authentication token is bound to (src/gate/reauth.ts): a digest of the key's own digest and its role,
   * the same across reloads while the key is unchanged and different once its value (a rotation) or its role changes.
   * Neither the key nor the digest it is matched by.
   */
  readonly binding: string;
}

export class KeyRing {
  readonly #keys: readonly (KeyIdentity & { digest: Buffer })[];
  constructor(keys: readonly ApiKey[]) {
    // When no key names a role, every key is an admin: a one-key setup keeps working. Otherwise unnamed means user.
    const anyRole = keys.some((k) => k.role !== undefined);
    this.#keys = keys.map((k) => {
      const role = k.role ?? (anyRole ? 'user' : 'admin');
      const d = digest(k.key);
      return { name: k.name, role, digest: d, binding: digest(`tollgate-reauth:${role}:${d.toString('hex')}`).toString('hex') };
    });
  }

  get open(): boolean {
    return this.#keys.length === 0;
  }

  /** The key whose value is `presented`, or null. Every configured key is compared, so timing says nothing. */
  match(presented: string): KeyIdentity | null {
    const d = digest(presented);
    let found: KeyIdentity | null = null;
    for (const k of this.#keys) if (crypto.timingSafeEqual(d, k.digest) && found === null) found = identity(k);
    return found;
  }

  /** The identity of a key by name (a re-authentication token names its key), or null when it is gone. */
  byName(name: string): KeyIdentity | null {
    const k = this.#keys.find((x) => x.name === name);
    return k === undefined ? null : identity(k);
  }
}

const identity = (k: KeyIdentity): KeyIdentity => ({ name: k.name, role: k.role, binding: k.binding });

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
