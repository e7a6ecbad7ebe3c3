// server.idle_gc_s through the gateway: one full collection once no proxied request has begun for that long after
// some did, counted in tollgate_idle_gc_total; scrapes and probes do not count as requests; a live edit to 0 turns it
// off and back on. The app runs in this process, so the collection itself is seen by a gc observer here.

import { PerformanceObserver, constants } from 'node:perf_hooks';
import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { metricValue } from '../helpers/prom.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('one collection per quiet spell after proxied requests, seen in the metric and by V8', async (t) => {
  const gw = await startApp(t, { server: { idle_gc_s: 0.5 }, providers: { demo: DEMO_PROVIDER } });
  const count = async () => metricValue(await gw.metrics(), 'tollgate_idle_gc_total', {});
  const chat = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(res.status, 200);
    await res.text();
  };
  /** Wait until the metric reads `n`, at most `ms`; its value then. */
  const reach = async (n: number, ms: number) => {
    const end = Date.now() + ms;
    while ((await count()) < n && Date.now() < end) await sleep(100);
    return count();
  };
  const majors: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (((e as unknown as { detail: { kind: number } }).detail).kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(e.startTime);
  });
  obs.observe({ entryTypes: ['gc'] });
  t.teardown(() => obs.disconnect());

  await sleep(2500);
  t.match(await gw.metrics(), /^tollgate_idle_gc_total 0$/m, 'at 0 from the start: none before any proxied request');

  // Scrapes and probes in the quiet that follows are not requests: they neither hold it off nor owe another.
  await chat();
  const quietFrom = performance.now();
  t.equal(await reach(1, 20_000), 1, 'one full collection once quiet (the young one first, the full one 5 s later)');
  await sleep(50);
  t.ok(majors.some((at) => at >= quietFrom), 'V8 ran a major collection after the request');
  for (let i = 0; i < 15; i++) {
    t.equal((await fetch(`${gw.url}/metrics`)).status, 200);
    t.equal((await fetch(`${gw.url}/health`)).status, 200);
    await sleep(150);
  }
  t.equal(await count(), 1, 'scrapes and probes: no second one');

  // Live config: 0 turns it off; set again, the owed one comes.
  const cfg = gw.holder.current;
  gw.holder.replace({ ...cfg, server: { ...cfg.server, idle_gc_s: 0 } });
  await chat();
  await sleep(2500);
  t.equal(await count(), 1, 'idle_gc_s 0: none');
  gw.holder.replace({ ...cfg, server: { ...cfg.server, idle_gc_s: 0.5 } });
  t.equal(await reach(2, 20_000), 2, 'back on: the quiet after the last request owes one');
});

t.test('a stream still running holds the full collection off; it comes once the stream has ended', async (t) => {
  // 60 chunks 200 ms apart: a 12 s stream. The collection is due about 6-7 s in (the first look, the young one, 5 s).
  const slow = { ...DEMO_PROVIDER, mock: { chunks: 60, latency_ms: 0, chunk_delay_ms: 200 } };
  const gw = await startApp(t, { server: { idle_gc_s: 0.5 }, providers: { demo: slow } });
  const count = async () => metricValue(await gw.metrics(), 'tollgate_idle_gc_total', {});
  const started = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200);
  const body = res.text();
  await sleep(9000);
  t.equal(await count(), 0, 'due, but the stream is running: not collected');
  const text = await body;
  t.match(text, /data: \[DONE\]/, 'the stream ended whole');
  t.ok(Date.now() - started >= 11_000, 'it ran about 12 s');
  const end = Date.now() + 5000;
  while ((await count()) < 1 && Date.now() < end) await sleep(100);
  t.equal(await count(), 1, 'collected once the stream ended');
});

t.test('the default is 10 s, and a negative value is refused by the config', async (t) => {
  const { parseConfig } = await import('../../src/config/load.js');
  t.equal(parseConfig({}, {}).server.idle_gc_s, 10);
  t.throws(() => parseConfig({ server: { idle_gc_s: -1 } }, {}), /idle_gc_s/);
});
