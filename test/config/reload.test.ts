// Live reload through the running app, as main.ts wires it: a ConfigHolder from loadConfigFile, build(), and
// watchConfigFile on the same temp YAML file. Valid edits reach new requests (models, api keys, prices, mock
// options); a request in flight finishes on the snapshot it started with, with all its chunks, even when the edit
// removes its model or rebuilds its upstream pool; an invalid edit changes nothing and is counted as rejected.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { build } from '../../src/app.js';
import { loadConfigFile } from '../../src/config/load.js';
import { ConfigHolder, watchConfigFile } from '../../src/config/watch.js';
import { mockWords } from '../../src/providers/mock.js';
import { DEMO_PROVIDER } from '../helpers/app.js';
import { DEFAULT_WORDS, fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

// reloads read process.env: keep the overrides out so the file alone decides
delete process.env.PORT;
delete process.env.TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE;

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const up = await startFakeOpenAI(t);

type Raw = Record<string, unknown>;
const demo = (extra: Raw = {}): Raw => ({ ...DEMO_PROVIDER, ...extra });
const fake = (extra: Raw = {}): Raw => fakeProvider(up.baseUrl, { timeouts: { connect_s: 2, stall_s: 5 }, ...extra });
/** One data directory for the whole file (chdb binds one per process). */
const writeConfig = (providers: Raw, server: Raw = {}) =>
  writeFileSync(file, stringify({ server, storage: { data_dir: join(dir, 'data'), batch: { flush_ms: 50 } }, providers }));

writeConfig({ demo: demo(), fake: fake() });
const holder = new ConfigHolder(loadConfigFile(file));
const app = await build({ config: holder, logger: false, processMetrics: false });
t.teardown(() => app.close());
await app.listen({ host: '127.0.0.1', port: 0 });
await app.tollgate.storeReady;
const addr = app.server.address();
const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

const errors: unknown[] = [];
const warnings: { sections?: string[] }[] = [];
let rejected = 0;
const log = { info: () => undefined, warn: (obj: object) => void warnings.push(obj), error: (obj: object) => void errors.push(obj) };
const stop = watchConfigFile(
  file,
  holder,
  log,
  () => {
    rejected++;
    app.tollgate.metrics.configReloads.inc({ result: 'rejected' }); // as main.ts does
  },
  200,
);
t.teardown(stop);
await sleep(150); // the watcher's first stat

let applied = 0;
holder.onChange(() => applied++);
/** Write the config and wait until the app has it. */
async function edit(providers: Raw, server: Raw = {}): Promise<void> {
  const n = applied;
  writeConfig(providers, server);
  await waitFor(() => applied > n, 2000);
}

async function models(headers: Record<string, string> = {}): Promise<{ status: number; ids: string[] }> {
  const res = await fetch(`${url}/v1/models`, { headers });
  const body = (await res.json()) as { data?: { id: string }[] };
  return { status: res.status, ids: (body.data ?? []).map((m) => m.id) };
}

async function chat(model: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }),
  });
  return { status: res.status, requestId: res.headers.get('x-request-id') ?? '', body: (await res.json()) as Record<string, unknown> };
}

interface StreamChunk {
  choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
}

/** A streamed chat request read in the background: frames as they arrive, `done` once the body ends. */
async function openStream(model: string) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hello there' }] }),
  });
  const frames: string[] = [];
  let firstDelta: () => void = () => undefined;
  const gotFirstDelta = new Promise<void>((r) => (firstDelta = r));
  const s = { status: res.status, requestId: res.headers.get('x-request-id') ?? '', frames, gotFirstDelta, done: false, finished: Promise.resolve() };
  s.finished = (async () => {
    const dec = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!frame.startsWith('data: ')) continue;
        frames.push(frame.slice(6));
        if (frame.includes('"content":"') && !frame.includes('"content":""')) firstDelta();
      }
    }
    s.done = true;
  })();
  return s;
}

function contentOf(frames: string[]): { deltas: string[]; finish: string[]; done: boolean } {
  const deltas: string[] = [];
  const finish: string[] = [];
  for (const f of frames) {
    if (f === '[DONE]') continue;
    const c = JSON.parse(f) as StreamChunk;
    for (const ch of c.choices ?? []) {
      if (ch.delta?.content) deltas.push(ch.delta.content);
      if (ch.finish_reason) finish.push(ch.finish_reason);
    }
  }
  return { deltas, finish, done: frames.at(-1) === '[DONE]' };
}

async function row(requestId: string): Promise<Record<string, unknown> | undefined> {
  if (!/^[0-9a-f-]{36}$/.test(requestId)) throw new Error(`not a request id: ${requestId}`);
  await app.tollgate.writer.flush();
  const s = app.tollgate.store;
  const rows = await s.query<Record<string, unknown>>(
    `SELECT request_id, status, api_key_name, input_tokens, output_tokens, toString(cost) AS cost FROM ${s.t('requests')} FINAL WHERE request_id = '${requestId}'`,
  );
  return rows[0];
}

const near = (a: number, b: number) => Math.abs(a - b) < 1e-12;

t.test('a model added to the file is listed by GET /v1/models within 2 s', async (t) => {
  t.same((await models()).ids, ['demo/echo-1', 'fake/gpt-4o', 'fake/org/model-with/slashes']);
  t.equal((await chat('demo/echo-2')).status, 404, 'not served before the edit');
  const t0 = Date.now();
  writeConfig({ demo: demo({ models: { 'echo-1': { kind: 'llm' }, 'echo-2': { kind: 'llm' } } }), fake: fake() });
  await waitFor(async () => (await models()).ids.includes('demo/echo-2'), 2000);
  t.ok(Date.now() - t0 < 2000, `listed after ${Date.now() - t0} ms`);
  t.same((await models()).ids, ['demo/echo-1', 'demo/echo-2', 'fake/gpt-4o', 'fake/org/model-with/slashes']);
  const res = await chat('demo/echo-2');
  t.equal(res.status, 200, 'and served');
  t.equal(res.body.model, 'echo-2');
  t.equal(metricValue(await app.tollgate.metrics.registry.metrics(), 'tollgate_config_reloads_total', { result: 'applied' }), 1, 'counted as applied');
});

t.test('an invalid edit changes nothing and is counted as rejected', async (t) => {
  writeFileSync(
    file,
    stringify({
      storage: { data_dir: join(dir, 'data') },
      providers: { demo: demo({ models: { 'echo-3': { kind: 'llm' } }, pricee: 1 }), fake: fake() },
    }),
  );
  await waitFor(() => rejected === 1, 2000);
  t.match(errors.at(-1), { issues: [{ path: 'providers.demo.pricee', message: 'unknown key' }] }, 'logged with the issue');
  t.same((await models()).ids, ['demo/echo-1', 'demo/echo-2', 'fake/gpt-4o', 'fake/org/model-with/slashes'], 'the old list');
  t.equal((await chat('demo/echo-2')).status, 200, 'the old config keeps serving');
  t.equal((await chat('demo/echo-3')).status, 404);
  const m = await app.tollgate.metrics.registry.metrics();
  t.equal(metricValue(m, 'tollgate_config_reloads_total', { result: 'rejected' }), 1);
  t.equal(metricValue(m, 'tollgate_config_reloads_total', { result: 'applied' }), 1);
});

t.test('a streamed request in flight finishes on its snapshot while a price and mock edit applies', async (t) => {
  const models2 = { 'echo-1': { kind: 'llm' }, 'echo-2': { kind: 'llm' } };
  await edit({ demo: demo({ models: models2, mock: { chunks: 8, latency_ms: 0, chunk_delay_ms: 150 } }), fake: fake() });

  const s = await openStream('demo/echo-1');
  t.equal(s.status, 200);
  await s.gotFirstDelta;
  // mid-stream: a new price and a different mock shape
  await edit({ demo: demo({ models: models2, price: { input: 5, output: 7 }, mock: { chunks: 3, latency_ms: 0, chunk_delay_ms: 0 } }), fake: fake() });
  t.equal(holder.current.providers.demo?.price?.input, 5, 'the edit is live');
  t.notOk(s.done, 'while the stream is still in flight');
  await s.finished;
  const c = contentOf(s.frames);
  t.equal(c.deltas.length, 8, 'every chunk of the old shape arrived');
  t.equal(c.deltas.join(''), mockWords(8).join(' '));
  t.same(c.finish, ['stop']);
  t.ok(c.done, 'ended with [DONE]');

  const old = await row(s.requestId);
  t.match(old, { status: 'success' });
  t.equal(Number(old?.input_tokens), 3);
  t.equal(Number(old?.output_tokens), 8);
  t.ok(near(Number(old?.cost), (3 * 1 + 8 * 2) / 1e6), `in-flight request priced at the old price: ${String(old?.cost)}`);

  const next = await chat('demo/echo-1');
  t.equal(next.status, 200);
  t.equal((next.body.usage as { completion_tokens: number }).completion_tokens, 3, 'a new request sees the new mock options');
  const fresh = await row(next.requestId);
  t.ok(near(Number(fresh?.cost), (3 * 5 + 3 * 7) / 1e6), `a new request is priced at the new price: ${String(fresh?.cost)}`);
});

t.test('a streamed upstream request in flight survives an edit that rebuilds its connection pool', async (t) => {
  const before = await chat('fake/gpt-4o'); // the pool exists
  t.equal(before.status, 200);
  up.next({ kind: 'ok', chunkDelayMs: 200 });
  const s = await openStream('fake/gpt-4o');
  t.equal(s.status, 200);
  await s.gotFirstDelta;
  await edit({ demo: demo(), fake: fake({ connections: 4, price: { input: 100, output: 100 } }) });
  t.equal(holder.current.providers.fake?.connections, 4, 'the edit is live');
  t.notOk(s.done, 'while the stream is still in flight');
  await s.finished;
  const c = contentOf(s.frames);
  t.equal(c.deltas.join(''), DEFAULT_WORDS.join(''), 'every chunk arrived');
  t.same(c.finish, ['stop']);
  t.ok(c.done, 'ended with [DONE]');
  const old = await row(s.requestId);
  t.match(old, { status: 'success' });
  t.ok(near(Number(old?.cost), (8 * 2.5 + 3 * 1.25 + 5 * 10 + 2 * 10) / 1e6), `priced at the old price: ${String(old?.cost)}`);

  const after = await chat('fake/gpt-4o');
  t.equal(after.status, 200, 'a new request goes through the new pool');
  t.ok(near(Number((await row(after.requestId))?.cost), (11 * 100 + 7 * 100) / 1e6), 'at the new price (cached at input, reasoning at output)');
});

t.test('a streamed request in flight finishes when the edit removes its model', async (t) => {
  await edit({ demo: demo({ models: { 'echo-1': {}, 'echo-2': {} }, mock: { chunks: 6, latency_ms: 0, chunk_delay_ms: 150 } }), fake: fake() });
  const s = await openStream('demo/echo-2');
  await s.gotFirstDelta;
  await edit({ demo: demo({ models: { 'echo-1': {} } }), fake: fake() });
  t.notOk(s.done, 'the edit applied while the stream was in flight');
  await s.finished;
  const c = contentOf(s.frames);
  t.equal(c.deltas.length, 6, 'all chunks');
  t.ok(c.done);
  t.match(await row(s.requestId), { status: 'success' });
  t.equal((await chat('demo/echo-2')).status, 404, 'new requests for the removed model are refused');
  t.notOk((await models()).ids.includes('demo/echo-2'));
});

t.test('api keys added and removed by an edit apply to the next request', async (t) => {
  await edit({ demo: demo(), fake: fake() }, { api_keys: [{ name: 'ci', key: 'tk-ci-1' }] });
  t.equal((await models()).status, 401, 'no key: refused');
  t.equal((await models({ authorization: 'Bearer tk-wrong' })).status, 401, 'wrong key: refused');
  t.equal((await models({ authorization: 'Bearer tk-ci-1' })).status, 200, 'the new key works');
  const res = await chat('demo/echo-1', { authorization: 'Bearer tk-ci-1' });
  t.equal(res.status, 200);
  t.match(await row(res.requestId), { api_key_name: 'ci' });

  await edit({ demo: demo(), fake: fake() });
  t.equal((await models()).status, 200, 'keys removed: open again (loopback)');
});

t.test('an edit of server.body_limit_bytes takes effect or is flagged as needing a restart', async (t) => {
  const warned = warnings.length;
  await edit({ demo: demo(), fake: fake() }, { body_limit_bytes: 1024 });
  const big = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'x'.repeat(4096) }] }),
  });
  await big.arrayBuffer();
  const flagged = warnings.slice(warned).some((w) => w.sections?.includes('server.body_limit_bytes'));
  t.ok(big.status === 413 || flagged, `a 4 KiB body got ${big.status}; restart warning naming server.body_limit_bytes: ${flagged}`);
});

t.test('every applied and rejected edit is counted', async (t) => {
  const m = await app.tollgate.metrics.registry.metrics();
  t.equal(applied, 9, 'nine valid edits in this file, each applied once');
  t.equal(metricValue(m, 'tollgate_config_reloads_total', { result: 'applied' }), applied);
  t.equal(metricValue(m, 'tollgate_config_reloads_total', { result: 'rejected' }), 1);
});
