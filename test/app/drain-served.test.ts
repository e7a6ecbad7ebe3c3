// Around a stop and a live edit, a request keeps what it started with and is recorded:
// - a fusion combo's judge is resolved with its members, from the config the request started with (resolved after
//   the panel, an edit made meanwhile priced it anew, or, removing it, refused the request after its panel was billed);
// - a request that comes on an open connection while the gateway drains is served and recorded (fastify's
//   return503OnClosing answered it in its own shape, with no x-request-id and no row).

import t from 'tap';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, testConfig } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';
import { tempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/client.js';

// An OpenAI upstream: `slow` answers after 600 ms, everything else at once; 10 tokens in, 4 out.
const up = await listenLoopback(t, async (req, res) => {
  let raw = '';
  for await (const c of req) raw += String(c);
  const body = JSON.parse(raw) as { model: string };
  if (body.model === 'slow') await sleep(600);
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
    id: 'c', object: 'chat.completion', created: 1, model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: `answer of ${body.model}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
  }));
}, (err, res) => res.writeHead(500).end(String(err)));

const dataDir = tempDir(t);
const raw = (judgePrice: number, judgeListed = true) => ({
  storage: { batch: { flush_ms: 50 } },
  providers: {
    up: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${up.port}/v1`, price: { input: 1, output: 1 }, models: { slow: {} } },
    ...(judgeListed ? { judge: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${up.port}/v1`, price: { input: judgePrice, output: judgePrice }, models: { fast: {} } } } : {}),
    demo: { group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 10, latency_ms: 0, chunk_delay_ms: 50 }, models: { 'echo-1': {} } },
  },
  combos: judgeListed ? { fus: { strategy: 'fusion', models: ['up/slow'], judge: 'judge/fast' } } : {},
});
const gw = await startApp(t, raw(1), { dataDir });
const ask = async (model: string) => {
  const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  return { status: r.status, id: r.headers.get('x-request-id')!, text: await r.text() };
};
const rowsOf = (id: string) => gw.rows(`request_id = toUUID('${id}') OR parent_id = toUUID('${id}')`);

t.test("a fusion combo's judge keeps the price the request started with", async (t) => {
  const p = ask('fus');
  await sleep(200);
  gw.holder.replace(testConfig(raw(1000), dataDir)); // the judge's price: 1 -> 1000 USD per 1M, while the panel runs
  const r = await p;
  t.equal(r.status, 200);
  const judge = (await rowsOf(r.id)).find((x) => x.model === 'judge/fast' && x.kind === 'attempt');
  t.equal(Number(judge?.cost), 14 / 1e6, 'priced at 1 USD per 1M (10 + 4 tokens), not 1000');
  gw.holder.replace(testConfig(raw(1), dataDir));
});

t.test('a fusion combo whose judge is removed mid-request still answers with it', async (t) => {
  const p = ask('fus');
  await sleep(200);
  gw.holder.replace(testConfig(raw(1, false), dataDir));
  const r = await p;
  t.equal(r.status, 200, r.text.slice(0, 200));
  t.match(r.text, /answer of fast/);
  gw.holder.replace(testConfig(raw(1), dataDir));
});

t.test('a request on an open connection while the gateway drains is served and recorded', async (t) => {
  const port = Number(new URL(gw.url).port);
  const req = (stream: boolean) => {
    const body = JSON.stringify({ model: 'demo/echo-1', stream, messages: [{ role: 'user', content: 'x' }] });
    return `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const s = connect(port, '127.0.0.1');
  t.teardown(() => s.destroy());
  let text = '';
  s.setEncoding('utf8').on('data', (d: string) => (text += d));
  const ended = new Promise((r) => s.on('close', r));
  await new Promise((r) => s.once('connect', r));
  s.write(req(true)); // a stream: 10 chunks, 50 ms apart
  await sleep(150);
  const closing = gw.app.close();
  await sleep(50);
  s.write(req(false)); // the next request on the same connection, during the drain
  await Promise.race([ended, sleep(5000)]);
  await closing;
  const answers = text.split(/(?=HTTP\/1\.1 )/);
  t.equal(answers.length, 2, 'two answers');
  const second = answers[1] ?? '';
  t.match(second, /^HTTP\/1\.1 200 /, 'the second is served');
  t.match(second, /connection: close/i, 'and closes the connection');
  const id = /x-request-id: (\S+)/i.exec(second)?.[1];
  t.ok(id, 'with its x-request-id');
  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: dataDir, username: 'default', password: '' });
  t.teardown(() => store.close());
  const rows = await store.query<Record<string, unknown>>(`SELECT toString(request_id) AS id, status FROM ${store.t('requests')} FINAL WHERE model = 'demo/echo-1'`);
  t.equal(rows.length, 2, 'both recorded');
  t.ok(rows.some((r) => r.id === id && r.status === 'success'), 'the second one with its id');
});
