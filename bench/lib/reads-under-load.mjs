// Reads under proxy load: the latency of a few `/api` reads while the gateway proxies at a steady concurrency (every
// request recorded, so its batch writer inserts about once a second), against the same reads with no load, on one
// gateway in one run. What it shows is whether a report waits for the request path's work on the store (inserts, the
// rollups' views, merges): the embedded store reads on connections of its own beside the one that inserts
// (docs/recording.md, "Embedded or server").

import { request } from 'undici';
import { Load, authHeaders } from './load.mjs';
import { REQUEST_BODY } from './payloads.mjs';
import { p50p99 } from './stats.mjs';

export const LOADED_READS = ['/api/usage?period=today', '/api/usage/logs?limit=50', '/api/usage/hourly', '/api/quota'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Each read in turn, every `gapMs`, for `seconds`: the latencies by read; throws on a non-200. */
async function readLoop(url, seconds, gapMs) {
  const times = Object.fromEntries(LOADED_READS.map((r) => [r, []]));
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (const path of LOADED_READS) {
      const t0 = performance.now();
      const res = await request(`${url}${path}`, { headers: authHeaders() });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode}`);
      times[path].push(performance.now() - t0);
    }
    await sleep(gapMs);
  }
  return times;
}

/**
 * The reads' p50 and p99 quiet and under `concurrency` non-streaming requests (the throughput run's load generator,
 * `Load`), `seconds` each, on the gateway at `url`; `proxied` and `errors` count the load's requests.
 */
export async function measureReadsUnderLoad({ url, seconds, concurrency, log }) {
  await sleep(3000); // the last batch of whatever ran before is inserted and merged
  const quiet = await readLoop(url, seconds, 100);
  const load = new Load({ origin: url, path: '/v1/chat/completions', body: REQUEST_BODY, stream: false, concurrency });
  let loaded;
  try {
    // The load runs 2 s before the reads (the writer's first inserts under it) and outlasts them.
    const running = load.run((seconds + 3) * 1000, false);
    await sleep(2000);
    loaded = await readLoop(url, seconds, 100);
    await running;
  } finally {
    await load.close();
  }
  const { issued, errors } = load.summary();
  const reads = LOADED_READS.map((path) => ({ path, quiet: p50p99(quiet[path]), loaded: p50p99(loaded[path]) }));
  for (const r of reads) log(`reads under load ${r.path}: quiet p50 ${r.quiet.p50.toFixed(1)} p99 ${r.quiet.p99.toFixed(1)} ms, loaded p50 ${r.loaded.p50.toFixed(1)} p99 ${r.loaded.p99.toFixed(1)} ms`);
  return { reads, proxied: issued - errors, errors, concurrency, seconds };
}
