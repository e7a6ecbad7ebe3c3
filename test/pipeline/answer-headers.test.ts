// A same-format path (the passthrough, the OpenAI Chat fast path) gives the client back what the provider tells its own
// client about the call: Anthropic's `request-id` (the SDK's `_request_id`), the rate limits (`anthropic-ratelimit-*`,
// `x-ratelimit-*`), `openai-processing-ms`, and the upstream's `x-request-id` as `x-upstream-request-id` (the client's
// `x-request-id` stays the id of its usage row); never cookies or account identifiers. Whole, streamed, and on an
// upstream error. A translated answer carries none (the client asked another format). Before, none reached the client:
// the Anthropic SDK's request id was null through the gateway and a client pacing itself by the limits had nothing.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';

let status = 200;
const UPSTREAM_HEADERS: Record<string, string | string[]> = {
  'request-id': 'req_011CUp', 'x-request-id': 'upstream-xrid-1',
  'anthropic-ratelimit-unified-status': 'allowed', 'anthropic-ratelimit-unified-5h-utilization': '0.42',
  'anthropic-ratelimit-tokens-remaining': '39000', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-tokens': '6ms',
  'openai-processing-ms': '321', 'openai-organization': 'org-secret-account', 'anthropic-organization-id': 'org-uuid',
  'set-cookie': ['__cf_bm=abc; path=/', 'other=1'], 'x-unrelated': 'no',
};
const PASSED = {
  'request-id': 'req_011CUp', 'x-upstream-request-id': 'upstream-xrid-1',
  'anthropic-ratelimit-unified-status': 'allowed', 'anthropic-ratelimit-unified-5h-utilization': '0.42',
  'anthropic-ratelimit-tokens-remaining': '39000', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-tokens': '6ms',
  'openai-processing-ms': '321',
};
const KEPT_BACK = ['openai-organization', 'anthropic-organization-id', 'set-cookie', 'x-unrelated'];

const upstream = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  let raw = '';
  for await (const c of req) raw += String(c);
  const body = JSON.parse(raw) as { stream?: boolean };
  const anthropic = req.url!.endsWith('/messages');
  if (status !== 200) {
    res.writeHead(status, { ...UPSTREAM_HEADERS, 'content-type': 'application/json', 'retry-after': '7' });
    res.end(JSON.stringify(anthropic ? { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } : { error: { message: 'slow down', type: 'rate_limit' } }));
    return;
  }
  const usage = anthropic ? { input_tokens: 5, output_tokens: 2 } : { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  if (body.stream) {
    res.writeHead(200, { ...UPSTREAM_HEADERS, 'content-type': 'text/event-stream' });
    if (anthropic) {
      const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`;
      res.write(ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 0 } } }));
      res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi' } }));
      res.write(ev('content_block_stop', { index: 0 }));
      res.write(ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }));
      res.end(ev('message_stop', {}));
    } else {
      const chunk = (o: unknown) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...(o as object) })}\n\n`;
      res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] }));
      res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
      res.write(chunk({ choices: [], usage }));
      res.end('data: [DONE]\n\n');
    }
    return;
  }
  res.writeHead(200, { ...UPSTREAM_HEADERS, 'content-type': 'application/json' });
  res.end(JSON.stringify(anthropic
    ? { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', stop_sequence: null, usage }
    : { id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage }));
}, (err, res) => res.destroy(err as Error));

const base = `http://127.0.0.1:${upstream.port}`;
const gw = await startApp(t, {
  providers: {
    an: { group: 'paid', format: 'anthropic', base_url: base, auth: { type: 'api_key', key: 'sk-ant-upstream' }, models: { m: {} } },
    oa: { group: 'paid', format: 'openai', base_url: `${base}/v1`, auth: { type: 'api_key', key: 'sk-oa-upstream' }, models: { m: {} } },
  },
});

async function call(path: string, model: string, stream: boolean): Promise<{ status: number; headers: Headers }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 10, stream, messages: [{ role: 'user', content: 'hello' }] }),
  });
  await res.arrayBuffer();
  return { status: res.status, headers: res.headers };
}

const samePaths: [string, string, string][] = [
  ['the Anthropic passthrough', '/v1/messages', 'an/m'],
  ['the OpenAI Chat fast path', '/v1/chat/completions', 'oa/m'],
];
for (const [name, path, model] of samePaths) {
  for (const [what, stream, code] of [['whole', false, 200], ['streamed', true, 200], ['an upstream 429', false, 429]] as const) {
    t.test(`${name}, ${what}: the provider's request id and rate limits come back; cookies and account ids do not`, async (t) => {
      status = code;
      t.teardown(() => void (status = 200));
      const a = await call(path, model, stream);
      t.equal(a.status, code);
      for (const [k, v] of Object.entries(PASSED)) t.equal(a.headers.get(k), v, k);
      for (const k of KEPT_BACK) t.equal(a.headers.get(k), null, `${k} kept back`);
      t.match(a.headers.get('x-request-id'), /^[0-9a-f-]{36}$/, "x-request-id is the usage row's id");
      await gw.flush();
      t.equal((await gw.rows(`request_id = '${a.headers.get('x-request-id')}'`)).length, 1, 'the row it names');
    });
  }
}

t.test('a translated answer carries none of them', async (t) => {
  const a = await call('/v1/messages', 'oa/m', false);
  t.equal(a.status, 200);
  for (const k of [...Object.keys(PASSED), ...KEPT_BACK]) t.equal(a.headers.get(k), null, `${k} not on a translated answer`);
});

t.test("the Anthropic SDK reads the provider's request id through the gateway", async (t) => {
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  const msg = await client.messages.create({ model: 'an/m', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(msg._request_id, 'req_011CUp');
});
