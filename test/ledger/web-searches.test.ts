// Anthropic's server-side web search is billed per search ($10 per 1,000), not per token: the usage reports the count
// (`server_tool_use.web_search_requests`). Before, a request's searches were not in its cost. Here: the parse, merge and
// bounds, the price (Anthropic's default, configured, turned off, none for other formats), and a request through the
// gateway recorded four ways that agree (row with its web_search_requests, the cost and search metrics, the span, the
// request log), the passthrough and a translated client alike.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { anthropicUsage, mergeUsage, renderUsage } from '../../src/wire/anthropic/usage.js';
import { computeCost } from '../../src/ledger/cost.js';
import { addUsage, totalTokens, type Usage } from '../../src/ledger/types.js';
import { parseConfig } from '../../src/config/load.js';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic, type FakeAnthropicUsage } from '../helpers/fake-anthropic.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

t.test('the usage: the searches counted apart from the tokens, bounded, merged as the larger', async (t) => {
  const u = anthropicUsage({ input_tokens: 20, output_tokens: 9, server_tool_use: { web_search_requests: 3 } })!;
  t.equal(u.webSearches, 3);
  t.equal(totalTokens(u), 29, 'not tokens');
  t.notOk('webSearches' in anthropicUsage({ input_tokens: 20, output_tokens: 9 })!, 'none reported: none kept');
  t.notOk('webSearches' in anthropicUsage({ input_tokens: 20, output_tokens: 9, server_tool_use: { web_search_requests: 101 } })!, 'more than 100 in a call: not believed');
  t.notOk('webSearches' in anthropicUsage({ input_tokens: 20, output_tokens: 9, server_tool_use: { web_search_requests: 'x' } })!);
  const start = anthropicUsage({ input_tokens: 20, output_tokens: 1, server_tool_use: { web_search_requests: 0 } });
  t.equal(mergeUsage(start, anthropicUsage({ output_tokens: 9, server_tool_use: { web_search_requests: 2 } }))!.webSearches, 2, "message_delta's count");
  t.equal(mergeUsage(anthropicUsage({ input_tokens: 20, output_tokens: 1, server_tool_use: { web_search_requests: 2 } }), anthropicUsage({ output_tokens: 9 }))!.webSearches, 2, 'kept when a later report omits it');
  const a: Usage = { input: 1, cached: null, cacheWrite: null, output: 1, reasoning: null, webSearches: 2 };
  t.equal(addUsage(a, { ...a, webSearches: 3 }).webSearches, 5, "a combo's attempts add up");
  t.strictSame(renderUsage(a).server_tool_use, { web_search_requests: 2 }, 'rendered back as the API reports it');
  t.notOk('server_tool_use' in renderUsage({ ...a, webSearches: undefined }));
});

t.test('the price: $10 per 1,000 for an anthropic-format provider unless configured; none for other formats', async (t) => {
  const cfg = parseConfig({
    providers: {
      anth: { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:1', price: { input: 3, output: 15 }, models: { m: { kind: 'llm' }, off: { kind: 'llm', price: { web_search_per_1k: 0 } }, own: { kind: 'llm', price: { web_search_per_1k: 25 } } } },
      oai: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', price: { input: 3, output: 15 }, models: { m: { kind: 'llm' } } },
    },
  });
  const u: Usage = { input: 1000, cached: null, cacheWrite: null, output: 100, reasoning: null, webSearches: 3 };
  const tokens = (1000 * 3 + 100 * 15) / 1e6; // 0.0045
  t.equal(computeCost(cfg.providers.anth!, 'm', u).cost, 0.0345, '3 searches at $10 per 1,000');
  t.equal(computeCost(cfg.providers.anth!, 'off', u).cost, tokens, 'a price of 0 turns them off');
  t.equal(computeCost(cfg.providers.anth!, 'own', u).cost, 0.0795, 'a configured price wins');
  t.equal(computeCost(cfg.providers.oai!, 'm', u).cost, tokens, 'no default for another format');
  t.equal(computeCost(cfg.providers.anth!, 'm', { ...u, webSearches: undefined }).cost, tokens, 'none reported: the tokens alone');
  t.throws(() => parseConfig({ providers: { x: { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:1', price: { input: 1, output: 1, web_search_per_1k: 1000 } } } }), 'at most 999');
});

t.test('through the gateway: row, metrics, span and request log agree, passthrough and translated', async (t) => {
  const up = await startFakeAnthropic(t);
  const gw = await startApp(t, { providers: { anth: fakeAnthropicProvider(up.url) } });
  const usage: FakeAnthropicUsage = { input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 7, output_tokens: 9, web_searches: 2 };
  // 20 x 3 + 5 x 0.3 + 7 x 3.75 + 9 x 15 = 222.75 per 1M tokens, and 2 searches at $10 per 1,000.
  const COST = 0.00022275 + 0.02;

  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const ask = { model: 'anth/claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
  up.next({ kind: 'ok', usage });
  t.strictSame((await anthropic.messages.create(ask)).usage.server_tool_use, { web_search_requests: 2 }, 'the passthrough client sees them');
  up.next({ kind: 'ok', usage });
  t.equal((await anthropic.messages.stream(ask).finalMessage()).usage.server_tool_use?.web_search_requests, 2);
  up.next({ kind: 'ok', usage });
  await openai.chat.completions.create({ model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] });
  up.next({ kind: 'ok', usage });
  for await (const _ of await openai.chat.completions.create({ model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], stream: true })) { /* read whole */ }

  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows()).length === 4);
  for (const r of rows) {
    const name = `${String(r.endpoint)} ${r.stream ? 'streamed' : 'whole'}`;
    t.equal(Number(r.web_search_requests), 2, `${name}: searches`);
    t.equal(Number(r.total_tokens), 41, `${name}: not in the tokens`);
    t.equal(Number(r.cost), COST, `${name}: the searches in the cost`);
  }
  const text = await gw.metrics();
  t.equal(metricValue(text, 'tollgate_web_searches_total', { provider: 'anth', model: 'anth/claude-haiku-4-5' }), 8, 'the search counter');
  t.equal(Number(metricValue(text, 'tollgate_cost_usd_total', { provider: 'anth', model: 'anth/claude-haiku-4-5', group: 'paid' }).toFixed(9)), Number((4 * COST).toFixed(9)), 'the cost metric');
  const spans = gw.spans.getFinishedSpans().filter((s) => s.attributes['tollgate.usage.web_search_requests'] !== undefined);
  t.ok(spans.length >= 4, 'the spans carry them');
  for (const s of spans) t.equal(s.attributes['tollgate.cost_usd'], COST);
  const logs = (await (await fetch(`${gw.url}/api/usage/request-logs`)).json()) as { data: { cost: number; usage: Record<string, unknown> }[] };
  for (const e of logs.data) {
    t.equal(e.usage.web_searches, 2, 'the request log shows them');
    t.equal(e.cost, COST);
  }
});

t.test("OpenAI's Responses API: its web_search_call items counted and priced ($10 per 1,000 unless configured)", async (t) => {
  const { listenLoopback } = await import('../helpers/loopback.js');
  const output = [
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'a' } },
    { type: 'web_search_call', id: 'ws_2', status: 'completed', action: { type: 'search', query: 'b' } },
    { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'found it', annotations: [] }] },
  ];
  const usage = { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 100, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1100 };
  const response = (model: string) => ({ id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model, output, usage });
  const up = await listenLoopback(t, async (req, res) => {
    let raw = '';
    for await (const c of req) raw += String(c);
    const body = JSON.parse(raw) as { model: string; stream?: boolean };
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response(body.model)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const r = response(body.model);
    res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...r, status: 'in_progress', output: [], usage: null } })}\n\n`);
    res.end(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response: r })}\n\n`);
  }, (err, res) => res.writeHead(500).end(String(err)));
  const provider = { group: 'paid', format: 'openai-responses', base_url: `http://127.0.0.1:${up.port}/v1`, auth: { type: 'api_key', key: 'k' }, price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } };
  const gw = await startApp(t, { providers: { oai: provider } });
  const COST = (1000 * 2 + 100 * 8) / 1e6 + 0.02; // two calls at $10 per 1,000
  const post = async (path: string, body: unknown) => (await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).text();
  await post('/v1/responses', { model: 'oai/m', input: 'search', tools: [{ type: 'web_search' }] });
  await post('/v1/responses', { model: 'oai/m', input: 'search', stream: true, tools: [{ type: 'web_search' }] });
  await post('/v1/chat/completions', { model: 'oai/m', messages: [{ role: 'user', content: 'search' }] });
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows()).length === 3);
  for (const r of rows) {
    const name = `${String(r.endpoint)} ${r.stream ? 'streamed' : 'whole'}`;
    t.equal(Number(r.web_search_requests), 2, `${name}: two web_search_call items`);
    t.equal(Number(r.cost), Number(COST.toFixed(12)), `${name}: the calls in the cost`);
  }
});
