// The reads a store makes, seen: each call of its `query` goes on to the real method, with a hook before it (for tests
// that say how many reads a route or a service makes against the real engine, or that make something happen while a
// read runs). The method is put back at teardown, or sooner by `restore`.

import type { Store } from '../../src/store/client.js';
import type { Teardown } from './tmp.js';

/**
 * Call `before` ahead of every `query` of `store`; what it returns, if a function, is called once that query has
 * settled. Returns what puts the method back.
 */
export function onQueries(t: Teardown, store: Store, before: () => (() => void) | void): { restore(): void } {
  const query = store.query;
  const wrapped = async function (this: Store, ...args: Parameters<Store['query']>) {
    const after = before();
    try {
      return await query.apply(this, args);
    } finally {
      after?.();
    }
  } as Store['query'];
  store.query = wrapped;
  const restore = () => {
    if (store.query === wrapped) store.query = query;
  };
  t.teardown(restore);
  return { restore };
}

export interface ReadCounter {
  /** `query` calls since the counter was made or last reset. */
  readonly count: number;
  reset(): void;
}

export function countReads(t: Teardown, store: Store): ReadCounter {
  let n = 0;
  onQueries(t, store, () => void n++);
  return {
    get count() {
      return n;
    },
    reset() {
      n = 0;
    },
  };
}
