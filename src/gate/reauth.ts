// Re-authentication for the routes that move the whole record (export, import): an admin presents its key again at
// POST /api/admin/reauth and gets a short-lived token bound to that key's name. Those routes take only such a token,
// so a key that leaked into a shell history or a proxy log is not enough on its own to carry the store away.
// Tokens live in this process only (a restart voids them) and are kept as SHA-256 digests.

import { createHash, randomBytes } from 'node:crypto';

export const REAUTH_TTL_MS = 5 * 60_000;
const PREFIX = 'tgr_';

const digest = (s: string): string => createHash('sha256').update(s).digest('hex');

export interface ReauthToken {
  readonly token: string;
  readonly keyName: string;
  readonly expiresAt: number;
}

export class ReauthTokens {
  readonly #live = new Map<string, { keyName: string; expiresAt: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A new token for `keyName`, valid for REAUTH_TTL_MS. */
  issue(keyName: string): ReauthToken {
    this.#sweep();
    const token = PREFIX + randomBytes(32).toString('base64url');
    const expiresAt = this.#now() + REAUTH_TTL_MS;
    this.#live.set(digest(token), { keyName, expiresAt });
    return { token, keyName, expiresAt };
  }

  /** The key name a live token is bound to, or null (unknown, expired, or not a token at all). */
  verify(presented: string | null): string | null {
    if (presented === null || !presented.startsWith(PREFIX)) return null;
    const entry = this.#live.get(digest(presented));
    if (entry === undefined) return null;
    if (entry.expiresAt <= this.#now()) {
      this.#live.delete(digest(presented));
      return null;
    }
    return entry.keyName;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, v] of this.#live) if (v.expiresAt <= now) this.#live.delete(k);
  }
}
