// The reads a store makes, counted: each call of its `query` goes on to the real method (for tests that say how many
// reads a route or a service makes against the real engine). The method is put back at teardown.

import type { Store } from '../../src/store/client.js';
import type { Teardown } from './tmp.js';

export interface ReadCounter {
  /** `query` calls since the counter was made or last reset. */
  readonly count: number;
  reset(): void;
}

export function countReads(t: Teardown, store: Store): ReadCounter {
  const query = store.query;
  let n = 0;
  store.query = function (this: Store, ...args: Parameters<Store['query']>) {
    n++;
    return query.apply(this, args);
  } as Store['query'];
  t.teardown(() => {
    store.query = query;
  });
  return {
    get count() {
      return n;
    },
    reset() {
      n = 0;
    },
  };
}
