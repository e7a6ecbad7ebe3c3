// A whole (non-streamed) answer must be whole within `timeouts.request_s` of the call: an upstream that drips its
// answer a byte at a time, each within the stall timeout, is cut off there: 504 TOLLGATE_ERR_UPSTREAM_TIMEOUT, its
// connection closed, recorded like any upstream failure. Before, `request_s` bounded only the wait for the headers,
// and such an upstream held the request (its socket, its memory) for as long as it liked.

import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { flushed, listenLoopback } from '../helpers/loopback.js';

const answer = JSON.stringify({
  id: 'c1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const drips: { closed: boolean; sent: number }[] = [];

const upstream = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  const declared = req.url!.startsWith('/declared');
  res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(answer.length) } : {}) });
  if (req.url!.startsWith('/whole')) return void res.end(answer);
  const drip = { closed: false, sent: 0 };
  drips.push(drip);
  res.on('close', () => (drip.closed = true));
  // A byte every 150 ms: each well within stall_s (1 s), the whole far beyond request_s (1 s).
  for (const ch of answer) {
    if (res.destroyed) return;
    await flushed(res, ch);
    drip.sent++;
    await new Promise((r) => setTimeout(r, 150));
  }
  res.end();
}, (err, res) => res.destroy(err as Error));

const provider = (mode: string) => ({
  group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${upstream.port}/${mode}/v1`, auth: { type: 'api_key', key: 'sk-x' },
  timeouts: { connect_s: 2, stall_s: 1, request_s: 1 }, models: { m: {} },
});
const gw = await startApp(t, { providers: { declared: provider('declared'), chunked: provider('chunked'), whole: provider('whole') } });

async function chat(model: string): Promise<{ status: number; body: { error?: { code: string } }; id: string | null; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }) });
  return { status: res.status, body: (await res.json()) as { error?: { code: string } }, id: res.headers.get('x-request-id'), ms: Date.now() - t0 };
}

for (const mode of ['declared', 'chunked']) {
  t.test(`a dripped answer (${mode}) is cut off at request_s: 504, its connection closed, recorded`, async (t) => {
    const a = await chat(`${mode}/m`);
    t.equal(a.status, 504);
    t.equal(a.body.error?.code, 'TOLLGATE_ERR_UPSTREAM_TIMEOUT');
    t.ok(a.ms < 3000, `answered within ${a.ms} ms (the whole drip takes ${answer.length * 150} ms)`);
    const drip = drips.at(-1)!;
    await new Promise((r) => setTimeout(r, 300));
    t.ok(drip.closed && drip.sent < answer.length, `the upstream's connection was closed after ${drip.sent} of ${answer.length} bytes`);
    await gw.flush();
    t.match((await gw.rows(`request_id = '${a.id}'`))[0], { status: 'failure', http_status: 504, error_type: 'TOLLGATE_ERR_UPSTREAM_TIMEOUT' });
  });
}

t.test('an answer that comes whole is served as before', async (t) => {
  const a = await chat('whole/m');
  t.equal(a.status, 200);
});
