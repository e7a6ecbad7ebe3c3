// A clean stop loses nothing (DESIGN.md decision 2): close() while a stream is in flight lets the stream finish,
// records it, drains the writer, and only then closes the store. Checked by reopening the same data directory.

import t from 'tap';
import { request } from 'undici';
import { openStore } from '../../src/store/client.js';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dataDir = tempDir(t);
const gw = await startApp(
  t,
  {
    // A long flush interval: rows written before close() returns can only come from the drain.
    storage: { batch: { flush_ms: 60_000 } },
    providers: {
      demo: { group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 10, latency_ms: 0, chunk_delay_ms: 60 }, models: { 'echo-1': {} } },
      slow: { group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 3, latency_ms: 600, chunk_delay_ms: 0 }, models: { 'echo-1': {} } },
    },
  },
  { dataDir },
);

t.test('close() mid-stream: the stream completes, its row and every queued row reach ClickHouse', async (t) => {
  // Three finished requests wait in the queue (flush_ms is a minute away).
  for (let i = 0; i < 3; i++) {
    const r = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo-1', max_tokens: 1, messages: [{ role: 'user', content: 'queued' }] }),
    });
    await r.body.dump();
  }
  t.equal(gw.app.tollgate.writer.depth, 3, 'three rows queued, none written yet');

  // A non-streamed request that will still be waiting for its upstream (600 ms) when close() is called; given a
  // head start so it is on the wire before the server stops taking connections.
  const unary = request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'slow/echo-1', messages: [{ role: 'user', content: 'in flight' }] }),
  });
  await new Promise((r) => setTimeout(r, 150));
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', stream: true, messages: [{ role: 'user', content: 'in flight' }] }),
  });
  const chunks: string[] = [];
  let closing: Promise<void> | null = null;
  for await (const c of res.body) {
    chunks.push(String(c));
    closing ??= gw.close(); // stop the gateway as soon as the first bytes arrived
  }
  const streamEnded = Date.now();
  const text = chunks.join('');
  t.match(text, /data: \[DONE\]\n\n$/, 'the in-flight stream finished normally');
  t.equal((text.match(/"content":"[^"]+"/g) ?? []).length, 10, 'with all its chunks');
  const u = await unary;
  t.equal(u.statusCode, 200, 'the in-flight unary request was answered');
  t.equal(u.headers.connection, 'close', 'and told the client the connection closes');
  await u.body.dump();
  await closing;
  // A hang guard, not a speed test: connections must not sit in keep-alive (72 s) while the server drains.
  t.ok(Date.now() - streamEnded < 10_000, 'close() does not wait for idle keep-alive connections');

  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: dataDir, username: 'default', password: '', batch: { max_rows: 10, flush_ms: 1000, queue_max: 10 } });
  t.teardown(() => store.close());
  const rows = await store.query<{ stream: boolean; status: string; output_tokens: string }>(
    `SELECT stream, status, output_tokens FROM ${store.t('requests')} FINAL ORDER BY ts`,
  );
  t.equal(rows.length, 5, 'the three queued rows and the two in flight');
  const streamed = rows.find((r) => r.stream);
  t.match(streamed, { status: 'success' });
  t.equal(Number(streamed!.output_tokens), 10);
  t.ok(rows.every((r) => r.status === 'success'));
});
