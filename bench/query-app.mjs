// The app child of the query benchmark (bench/queries.mjs): the compiled app from `build()` on a data directory the
// data child already filled, with the benchmark's providers (one quota kind each) and combos. Logger off, process
// metrics off, mock providers (nothing is proxied: only the analytics routes are driven).
//
//   node bench/query-app.mjs <data dir>     (started by bench/queries.mjs)

import { performance } from 'node:perf_hooks';
import { build } from '../dist/app.js';
import { parseConfig } from '../dist/config/load.js';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';
import { DB, benchConfig } from './lib/query-fixture.mjs';

const [dataDir] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: query-app.mjs <data dir>');

const config = parseConfig(benchConfig(dataDir), {}, '(bench)');
const app = await build({ config, logger: false, processMetrics: false });
await app.listen({ host: '127.0.0.1', port: 0 });
// The store opens in the background after listening: measured once it is open (startup is bench/lib/footprint.mjs's).
await app.tollgate.storeReady;
const { store } = app.tollgate;

// Diagnostics only: count the store reads a request makes, and the wall time during which at least one is in flight
// (the embedded engine runs one query at a time, so reads issued together queue: their own times would overlap), by
// wrapping this instance's method; the SQL is untouched.
const reads = { calls: 0, ms: 0 };
let inFlight = 0;
let busySince = 0;
const query = store.query.bind(store);
store.query = async (sql, params) => {
  if (inFlight++ === 0) busySince = performance.now();
  try {
    return await query(sql, params);
  } finally {
    reads.calls++;
    if (--inFlight === 0) reads.ms += performance.now() - busySince;
  }
};

serveParent({
  cpu: () => cpuMicros(),
  /** The store reads since the last call, then reset. */
  reads: () => {
    const out = { ...reads };
    reads.calls = 0;
    reads.ms = 0;
    return out;
  },
  parts: async () =>
    query(`SELECT table, count() AS parts, sum(rows) AS rows FROM system.parts WHERE database = '${DB}' AND active GROUP BY table ORDER BY table`),
  stop: () => app.close(),
});
announceReady({ url: `http://127.0.0.1:${app.server.address().port}` });
