// A claim: one replica of several does a piece of work once (docs/scaling.md). The claimant inserts a row whose
// insert deduplication token is the claim's key, so ClickHouse keeps only the first insert of a key; every claimant
// then reads the key's first row back, and the one it names owns the work. Exactly one wins even when all claim at
// the same moment; a claimant that comes later (within the table's deduplication window, or at any time, since the
// first row stays first) loses.

import type { Store } from './client.js';

/** True when `owner` holds the claim on `key` (it made it first). */
export async function claim(store: Store, key: string, owner: string, now = Date.now()): Promise<boolean> {
  await store.insert('claims', [{ key, owner, at: now }], `claim-${key}`);
  const [first] = await store.query<{ owner: string }>(
    `SELECT owner FROM ${store.t('claims')} WHERE key = {key:String} ORDER BY at, owner LIMIT 1`,
    { key },
  );
  return first?.owner === owner;
}
