// Re-authentication for the routes that move the whole record (export, import): an admin presents its key again at
// POST /api/admin/reauth and gets a short-lived token bound to that key: its name and its binding (a digest of the
// key's value and role, src/gate/keys.ts), so a rotated key (same name, new value), a role change or a removal voids
// the token. Those routes take only such a token, so a key that leaked into a shell history or a proxy log is not
// enough on its own to carry the store away. Tokens live in this process only (a restart voids them) and are kept as
// SHA-256 digests.

import { createHash, randomBytes } from 'node:crypto';

export const REAUTH_TTL_MS = 5 * 60_000;
const PREFIX = 'tgr_';

const digest = (s: string): string => createHash('sha256').update(s).digest('hex');

export interface ReauthToken {
  readonly token: string;
  readonly keyName: string;
  readonly expiresAt: number;
}

/** The key a live token was issued to. */
export interface ReauthHolder {
  readonly keyName: string;
  readonly binding: string;
}

export class ReauthTokens {
  readonly #live = new Map<string, { keyName: string; binding: string; expiresAt: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A new token for the key `keyName` whose binding is `binding` (KeyIdentity.binding), valid for REAUTH_TTL_MS. */
  issue(keyName: string, binding = ''): ReauthToken {
    this.#sweep();
    const token = PREFIX + randomBytes(32).toString('base64url');
    const expiresAt = this.#now() + REAUTH_TTL_MS;
    this.#live.set(digest(token), { keyName, binding, expiresAt });
    return { token, keyName, expiresAt };
  }

  /** The key a live token is bound to, or null (unknown, expired, voided, or not a token at all). */
  holder(presented: string | null): ReauthHolder | null {
    if (presented === null || !presented.startsWith(PREFIX)) return null;
    const entry = this.#live.get(digest(presented));
    if (entry === undefined) return null;
    if (entry.expiresAt <= this.#now()) {
      this.#live.delete(digest(presented));
      return null;
    }
    return { keyName: entry.keyName, binding: entry.binding };
  }

  /**
   * Void every token whose key `stillValid` refuses (called with the keys of a new config: a key removed, rotated or
   * given another role). Voided for good: the key changed back later does not bring its tokens back.
   */
  keepOnly(stillValid: (h: ReauthHolder) => boolean): void {
    for (const [k, v] of this.#live) if (!stillValid(v)) this.#live.delete(k);
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, v] of this.#live) if (v.expiresAt <= now) this.#live.delete(k);
  }
}
