// undici, in two parts (issue 17, the start; docs/benchmarks.md, "The packages in the bundle, and undici's Pool
// alone"). The package's index also loads fetch, WebSocket, EventSource, the mock agents, the cache stores and every
// interceptor: about 100 ms of a start on the benchmark machine, for nothing the request path uses.
// - `Pool` and `poolRequest`: the request path's, from undici's own modules of them (the package has no `exports` map,
//   so its files are importable; the lockfile pins the version, and test/app/lazy-modules.test.ts checks that what
//   a start loads holds them and not the index).
// - `undici()`: the whole package, imported on first use by what calls out now and then (a webhook, a usage source,
//   the tunnel check).

import type { Dispatcher, Pool as UndiciPool } from 'undici';
import PoolModule from 'undici/lib/dispatcher/pool.js';
import requestModule from 'undici/lib/api/api-request.js';
import symbols from 'undici/lib/core/symbols.js';

export type Pool = UndiciPool;
export const Pool = PoolModule;

/**
 * `pool.request(opts)` as the index would give it (the index adds `request` to every dispatcher's prototype).
 * `onSent`: called once when a connection of the pool takes the request to write it (undici's `onConnect` of its
 * handler, on an open socket, just before the request's head and body are written to it), unless `opts.signal` has
 * aborted by then (the request is then dropped unwritten). Never for a request whose connection could not be made:
 * undici fails the requests queued for it without taking them.
 */
export function poolRequest(pool: Pool, opts: Dispatcher.RequestOptions, onSent?: () => void): Promise<Dispatcher.ResponseData> {
  if (onSent === undefined) return requestModule.call(pool, opts);
  const watched = {
    dispatch(o: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
      const legacy = handler as { onConnect?: (abort: unknown, context: unknown) => void };
      const onConnect = legacy.onConnect;
      legacy.onConnect = (abort, context) => {
        onConnect?.call(handler, abort, context);
        if (!(opts.signal as { aborted?: boolean } | null | undefined)?.aborted) {
          try {
            onSent();
          } catch {
            // an observer never fails a request
          }
        }
      };
      return pool.dispatch(o, handler);
    },
  };
  return requestModule.call(watched as unknown as Dispatcher, opts);
}

/**
 * Whether a request dispatched to `pool` now would wait in its queue: every connection busy at its last dispatch,
 * none freed since (the pool's own flag, read in O(1): `pool.stats` walks every connection six times).
 */
export function poolBusy(pool: Pool): boolean {
  return (pool as unknown as Record<symbol, boolean>)[symbols.kBusy] === true;
}

/** The whole package, loaded on the first call. */
export async function undici(): Promise<typeof import('undici')> {
  // A CommonJS package: its exports are the namespace's default, in Node's ES module loader and in the CLI's bundle
  // alike (where the package is a chunk whose namespace has no named exports: test/app/bundle.test.ts, and the
  // build's LAZY_DEFAULT_ONLY, which stops on any other package imported lazily that way).
  return ((await import('undici')) as unknown as { default: typeof import('undici') }).default;
}
