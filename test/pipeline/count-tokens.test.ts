// POST /v1/messages/count_tokens with the Anthropic SDK: answered by an Anthropic-format provider (a fake on a real
// socket that counts like Anthropic's endpoint shape), refused with a clear 400 for a provider that cannot answer.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const received: { path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
    received.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.url !== '/v1/messages/count_tokens') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'no' } }));
      return;
    }
    // A deterministic count in the endpoint's own shape: 1 token per 4 characters of the JSON messages, plus system.
    const chars = JSON.stringify(body.messages).length + JSON.stringify(body.system ?? '').length;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ input_tokens: Math.ceil(chars / 4) }));
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise((r) => server.close(r)));
const port = (server.address() as AddressInfo).port;

const gw = await startApp(t, {
  providers: {
    anth: {
      name: 'Anthropic (fake)', group: 'paid', format: 'anthropic', base_url: `http://127.0.0.1:${port}`,
      auth: { type: 'api_key', key: 'sk-ant-fake' }, price: { input: 3, output: 15 },
      models: { 'claude-test': { kind: 'llm', capabilities: ['tools'] }, 'claude-full': { kind: 'llm' } },
    },
    demo: DEMO_PROVIDER,
  },
  combos: { fb: { strategy: 'fallback', models: ['anth/claude-test'] } },
});
const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });

t.test('an Anthropic-format target answers with its own count', async (t) => {
  const messages = [{ role: 'user' as const, content: 'How many tokens is this?' }];
  const res = await client.messages.countTokens({ model: 'anth/claude-test', system: 'Be brief.', messages });
  const sent = received.at(-1)!;
  t.equal(sent.path, '/v1/messages/count_tokens');
  t.equal(sent.headers['x-api-key'], 'sk-ant-fake', 'the provider key, not the client one');
  t.equal(sent.body.model, 'claude-test', 'prefix removed');
  t.notOk('max_tokens' in sent.body, 'no max_tokens on a count request');
  const expected = Math.ceil((JSON.stringify(sent.body.messages).length + JSON.stringify(sent.body.system).length) / 4);
  t.equal(res.input_tokens, expected);
  const rows = await gw.rows();
  t.equal(rows.length, 0, 'counting consumes no tokens: no usage row');
});

t.test('a target that cannot count is a clear 400, not a guess', async (t) => {
  const err = await client.messages.countTokens({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.ok(err instanceof Anthropic.BadRequestError);
  t.match(JSON.stringify((err as InstanceType<typeof Anthropic.BadRequestError>).error), /TOLLGATE_ERR_NOT_SUPPORTED/);
});

t.test('what is counted is the body the client sent: thinking, MCP servers, tool options, citations, beta headers', async (t) => {
  // (a review of token counting: the body was rebuilt from the canonical request, which carries none of these, so
  // the count understated what the message would be billed)
  const body = {
    model: 'anth/claude-full',
    thinking: { type: 'enabled', budget_tokens: 2048 },
    mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'example' }],
    tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    messages: [{ role: 'user', content: [
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The grass is green.' }, citations: { enabled: true } },
      { type: 'text', text: 'What colour is the grass?' },
    ] }],
  };
  const res = await fetch(`${gw.url}/v1/messages/count_tokens`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-beta': 'mcp-client-2025-04-04', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  });
  t.equal(res.status, 200, await res.text());
  const sent = received.at(-1)!;
  t.same(sent.body, { ...body, model: 'claude-full' }, 'the client\'s body, the model named as the provider knows it');
  t.equal(sent.headers['anthropic-beta'], 'mcp-client-2025-04-04', 'the client\'s beta header');
});

t.test('a combo is not counted: a 400 saying so, not a 404 that calls it unknown', async (t) => {
  for (const [path, payload] of [
    ['/v1/messages/count_tokens', { model: 'fb', messages: [{ role: 'user', content: 'x' }] }],
    ['/v1beta/models/fb:countTokens', { contents: [{ role: 'user', parts: [{ text: 'x' }] }] }],
  ] as const) {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
    t.equal(res.status, 400, path);
    t.match(await res.json(), { error: { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param: 'model', message: /not answered for a combo/ } }, path);
  }
});

// What the message path drops for a model that cannot take it (its `capabilities` leave out `reasoning`) the counter
// drops too, and says so with the same header: before, the count's answer named nothing it had left out.
t.test('a parameter the model cannot take is dropped from the count as from the message, and listed', async (t) => {
  const body = { model: 'anth/claude-test', thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'x' }] };
  const res = await fetch(`${gw.url}/v1/messages/count_tokens`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  });
  t.equal(res.status, 200);
  t.notOk('thinking' in received.at(-1)!.body, 'not sent to the counter');
  t.equal(res.headers.get('x-tollgate-dropped-params'), 'thinking', 'and listed as the message path lists it');
  const full = await fetch(`${gw.url}/v1/messages/count_tokens`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ ...body, model: 'anth/claude-full' }),
  });
  t.equal(full.status, 200);
  t.equal(full.headers.get('x-tollgate-dropped-params'), null, 'nothing dropped: no header');
});
