// A whole (non-streamed) upstream answer is read within server.upstream_answer_limit_bytes: past it the call fails
// 502 TOLLGATE_ERR_UPSTREAM_TOO_LARGE, the upstream's connection is closed before it has sent everything, and the
// failure is recorded like any other upstream failure (row, metrics, span). Before, the gateway read all of it (a
// 100 MB answer held about four times: +400 MB of memory a request) and then failed it as "not JSON".
// On each path that reads a whole answer: the OpenAI Chat fast path, the translated path, the same-format passthrough
// (which keeps the answer's bytes), an upstream error status (its body is relayed, so it is read whole too).

import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { flushed, listenLoopback } from '../helpers/loopback.js';

const LIMIT = 64 * 1024;
const HUGE = 8 * 1024 * 1024;

/** What the fake upstream managed to send of each huge answer before the gateway hung up. */
const sends: { mode: string; written: number; completed: boolean; closed: boolean }[] = [];

const chatAnswer = JSON.stringify({
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
});
const messagesAnswer = JSON.stringify({
  id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }],
  stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 11, output_tokens: 3 },
});

async function pour(res: ServerResponse, mode: string): Promise<void> {
  const send = { mode, written: 0, completed: false, closed: false };
  sends.push(send);
  res.on('close', () => (send.closed = true));
  const chunk = `{"pad":"${'x'.repeat(64 * 1024 - 10)}"}\n`;
  while (send.written < HUGE) {
    if (res.destroyed) return;
    await flushed(res, chunk);
    if (res.destroyed) return;
    send.written += chunk.length;
  }
  res.end();
  send.completed = true;
}

const upstream = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  const mode = req.url!.split('/')[1]!;
  const anthropic = req.url!.endsWith('/messages');
  if (mode === 'small') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(anthropic ? messagesAnswer : chatAnswer);
    return;
  }
  const status = mode === 'error' ? 500 : 200;
  res.writeHead(status, { 'content-type': 'application/json', ...(mode === 'declared' ? { 'content-length': String(HUGE) } : {}) });
  await pour(res, mode);
}, (err, res) => res.destroy(err as Error));

const provider = (mode: string, format: string) => ({
  group: 'paid', format, base_url: `http://127.0.0.1:${upstream.port}/${mode}/v1`, auth: { type: 'api_key', key: 'sk-test-upstream' },
  price: { input: 1, output: 1 }, models: { m: {} },
});
const providers: Record<string, unknown> = {};
for (const mode of ['small', 'declared', 'chunked', 'error']) {
  providers[`oa-${mode}`] = provider(mode, 'openai');
  providers[`an-${mode}`] = provider(mode, 'anthropic');
}
const gw = await startApp(t, { server: { upstream_answer_limit_bytes: LIMIT }, providers });

interface Answer { status: number; body: { error?: { code?: string; type?: string; message?: string } } & Record<string, unknown>; id: string | null }

async function chat(model: string): Promise<Answer> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
  });
  return { status: res.status, body: (await res.json()) as Answer['body'], id: res.headers.get('x-request-id') };
}
async function messages(model: string): Promise<Answer> {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }),
  });
  return { status: res.status, body: (await res.json()) as Answer['body'], id: res.headers.get('x-request-id') };
}

const paths: [string, (m: string) => Promise<Answer>, string][] = [
  ['the OpenAI Chat fast path', chat, 'oa'],
  ['the translated path (Anthropic client, OpenAI provider)', messages, 'oa'],
  ['the same-format passthrough (Anthropic)', messages, 'an'],
];

for (const [name, call, prefix] of paths) {
  t.test(`${name}: an answer within the limit is served and recorded`, async (t) => {
    const a = await call(`${prefix}-small/m`);
    t.equal(a.status, 200);
    await gw.flush();
    const [row] = await gw.rows(`request_id = '${a.id}'`);
    t.match(row, { status: 'success', input_tokens: 11, output_tokens: 3 });
  });
  for (const mode of ['declared', 'chunked', 'error']) {
    t.test(`${name}: an answer over the limit (${mode}) is refused, its connection closed, and recorded`, async (t) => {
      const before = sends.length;
      const failures = await failuresOf(`${prefix}-${mode}`);
      const a = await call(`${prefix}-${mode}/m`);
      t.equal(a.status, 502);
      t.match(a.body.error, { code: 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE', type: 'upstream_error', message: /server\.upstream_answer_limit_bytes \(65536\)/ });
      t.equal(sends.length, before + 1, 'one upstream call');
      // The gateway hung up: the fake could not send the whole answer (it waits on back-pressure for each chunk).
      await t.resolves(waitUntil(() => sends[before]!.closed));
      t.equal(sends[before]!.completed, false, `the upstream did not get to send all ${HUGE} bytes (sent ${sends[before]!.written})`);
      await gw.flush();
      const [row] = await gw.rows(`request_id = '${a.id}'`);
      t.match(row, { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE', provider: `${prefix}-${mode}` });
      const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === a.id);
      t.equal(span?.attributes['error.type'], 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE', 'the span says why');
      t.equal(await failuresOf(`${prefix}-${mode}`), failures + 1, 'counted as a failure');
    });
  }
}

async function failuresOf(provider: string): Promise<number> {
  const line = new RegExp(`^tollgate_requests_total\\{provider="${provider}",model="${provider}/m",status="failure"\\} (\\d+)$`, 'm');
  return Number(line.exec(await gw.metrics())?.[1] ?? 0);
}

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (done()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the upstream kept sending');
}
