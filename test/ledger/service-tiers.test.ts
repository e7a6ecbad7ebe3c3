// A call the provider serves at another service tier is billed at that tier's prices: OpenAI's `flex` at half the
// standard price ("Batch API rates"), `priority` dearer; the answer says which (`service_tier`). Recorded at the
// standard price, a flex call was counted at twice its bill. Here: the tier read from each format, the price (flex's
// default, configured tiers, the standard tier), and calls through the gateway (fast path, passthrough, translated,
// streamed and not) recorded with their tier and cost.

import t from 'tap';
import { listenLoopback } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';
import { computeCost } from '../../src/ledger/cost.js';
import { serviceTierOf, type Usage } from '../../src/ledger/types.js';
import { openaiUsage } from '../../src/wire/openai/usage.js';
import { responsesUsage } from '../../src/wire/openai-responses/usage.js';
import { anthropicUsage, mergeUsage } from '../../src/wire/anthropic/usage.js';
import { parseConfig } from '../../src/config/load.js';
import { codecFor } from '../../src/wire/registry.js';
import type { SseFrame } from '../../src/wire/sse.js';
import type { CanonicalEvent } from '../../src/wire/canonical.js';
import { waitFor } from '../helpers/wait.js';

t.test('the tier as each format reports it; the standard tier and odd values are none', async (t) => {
  t.equal(serviceTierOf('FLEX'), 'flex');
  for (const v of ['default', 'standard', 'auto', '', 'x'.repeat(40), '../a', 3, null]) t.equal(serviceTierOf(v), undefined, String(v));
  t.equal(openaiUsage({ prompt_tokens: 10, completion_tokens: 2 }, 'flex')?.serviceTier, 'flex');
  t.notOk('serviceTier' in openaiUsage({ prompt_tokens: 10, completion_tokens: 2 }, 'default')!);
  t.equal(responsesUsage({ input_tokens: 10, output_tokens: 2 }, [], 'priority')?.serviceTier, 'priority');
  t.equal(anthropicUsage({ input_tokens: 10, output_tokens: 2, service_tier: 'priority' })?.serviceTier, 'priority');
  t.notOk('serviceTier' in anthropicUsage({ input_tokens: 10, output_tokens: 2, service_tier: 'standard' })!);
  t.equal(mergeUsage(anthropicUsage({ input_tokens: 10, output_tokens: 1, service_tier: 'priority' }), anthropicUsage({ output_tokens: 5 }))?.serviceTier, 'priority', "message_delta keeps message_start's tier");
  const standard = mergeUsage(anthropicUsage({ input_tokens: 10, output_tokens: 1, service_tier: 'priority' }), anthropicUsage({ output_tokens: 5, service_tier: 'standard' }), 'standard');
  t.notOk(standard !== null && 'serviceTier' in standard, "message_delta's standard tier replaces message_start's priority");
});

t.test('every stream: the last tier named wins, the standard tier included', async (t) => {
  const frame = (data: unknown, event?: string): SseFrame => ({ event: event ?? null, data: JSON.stringify(data), id: null }) as SseFrame;
  const lastTier = (format: 'anthropic' | 'openai' | 'openai-responses', frames: SseFrame[]): string | undefined => {
    const parser = codecFor(format).createStreamParser();
    const usages = frames.flatMap((f) => parser.frame(f)).filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage');
    return usages.at(-1)?.usage.serviceTier;
  };
  // Anthropic: message_start's usage, then message_delta's.
  const start = (tier: string) => frame({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 10, output_tokens: 1, service_tier: tier } } }, 'message_start');
  const delta = (tier: string) => frame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5, service_tier: tier } }, 'message_delta');
  t.equal(lastTier('anthropic', [start('priority'), delta('standard')]), undefined, 'Anthropic: priority, then standard');
  t.equal(lastTier('anthropic', [start('standard'), delta('priority')]), 'priority', 'Anthropic: standard, then priority');
  // OpenAI Chat: a vendor that repeats the same usage on every chunk, its tier changing.
  const chunk = (tier: string) => frame({ id: 'c', object: 'chat.completion.chunk', model: 'm', service_tier: tier, choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } });
  t.equal(lastTier('openai', [chunk('priority'), chunk('default')]), undefined, 'Chat: priority, then default');
  t.equal(lastTier('openai', [chunk('default'), chunk('flex')]), 'flex', 'Chat: default, then flex');
  // Responses: the tier and the usage come together, in the terminal event.
  const done = (tier: string) => frame({ type: 'response.completed', sequence_number: 1, response: { id: 'r', status: 'completed', model: 'm', output: [], service_tier: tier, usage: { input_tokens: 10, output_tokens: 2 } } }, 'response.completed');
  t.equal(lastTier('openai-responses', [done('priority')]), 'priority', 'Responses: the terminal event says it');
  t.equal(lastTier('openai-responses', [done('default')]), undefined, 'Responses: default is standard');
});

t.test('the price: flex at half for the OpenAI formats unless configured; configured tiers; else the standard price', async (t) => {
  const cfg = parseConfig({
    providers: {
      oai: {
        group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', price: { input: 2, output: 8, cached: 0.5 },
        models: { m: { kind: 'llm' }, tiered: { kind: 'llm', price: { service_tiers: { flex: { input: 1.5 }, priority: { input: 3.5, output: 14 } } } } },
      },
      ant: { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:1', price: { input: 3, output: 15 }, models: { m: { kind: 'llm' } } },
    },
  });
  const u: Usage = { input: 1000, cached: 200, cacheWrite: null, output: 100, reasoning: null };
  const standard = (1000 * 2 + 200 * 0.5 + 100 * 8) / 1e6; // 0.0029
  t.equal(computeCost(cfg.providers.oai!, 'm', u).cost, standard);
  t.equal(computeCost(cfg.providers.oai!, 'm', { ...u, serviceTier: 'flex' }).cost, standard / 2, 'flex: every price halved');
  t.equal(computeCost(cfg.providers.oai!, 'm', { ...u, serviceTier: 'priority' }).cost, standard, 'priority not configured: the standard price');
  t.equal(computeCost(cfg.providers.oai!, 'tiered', { ...u, serviceTier: 'flex' }).cost, (1000 * 1.5 + 200 * 0.5 + 100 * 8) / 1e6, "a configured tier's prices, the rest the base's");
  t.equal(computeCost(cfg.providers.oai!, 'tiered', { ...u, serviceTier: 'priority' }).cost, (1000 * 3.5 + 200 * 0.5 + 100 * 14) / 1e6);
  t.equal(computeCost(cfg.providers.ant!, 'm', { ...u, serviceTier: 'flex' }).cost, (1000 * 3 + 200 * 3 + 100 * 15) / 1e6, 'no flex default for Anthropic');
  t.throws(() => parseConfig({ providers: { x: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', price: { input: 1, output: 1, service_tiers: { 'Bad Name': {} } } } } }), 'tier names are checked');
  // A long prompt on a model with a long-context tier: flex is half of the long-context price, not of the base.
  const long = parseConfig({ providers: { l: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', price: { input: 2, output: 8, tiers: [{ above_input_tokens: 1000, input: 4, output: 16 }] }, models: { m: { kind: 'llm' } } } } });
  const big: Usage = { input: 2000, cached: null, cacheWrite: null, output: 100, reasoning: null };
  t.equal(computeCost(long.providers.l!, 'm', big).cost, (2000 * 4 + 100 * 16) / 1e6, 'standard: the long-context price');
  t.equal(computeCost(long.providers.l!, 'm', { ...big, serviceTier: 'flex' }).cost, (2000 * 4 + 100 * 16) / 1e6 / 2, 'flex: half of it');
});

// The format's defaults (flex at half, $10 a search) are OpenAI's and Anthropic's published rules: a provider linked
// to another vendor's catalog speaks the format and bills its own way (Groq: "Pricing matches the on-demand tier"
// for flex). Before, every `openai` provider's flex call was recorded at half, `tollgate providers add groq`'s too.
t.test("the format's defaults apply to its own vendor and to providers linked to no catalog, not to another vendor's", async (t) => {
  const cfg = parseConfig({
    providers: {
      groq: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', auth: { type: 'api_key', key: 'k' }, models: { 'llama-3.3-70b-versatile': { kind: 'llm' } } },
      own: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', catalog: 'groq', price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } },
      oai: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1', catalog: 'openai', price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } },
      plain: { group: 'paid', format: 'openai-responses', base_url: 'http://127.0.0.1:1', catalog: '', price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } },
      ds: { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:1', catalog: 'deepseek', price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } },
      ant: { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:1', catalog: 'anthropic', price: { input: 2, output: 8 }, models: { m: { kind: 'llm' } } },
    },
  }, { GROQ_API_KEY: 'k' });
  t.equal(cfg.providers.groq!.catalog, 'groq', 'the prefix names the catalog');
  const million: Usage = { input: 1_000_000, cached: null, cacheWrite: null, output: 1_000_000, reasoning: null };
  const groq = computeCost(cfg.providers.groq!, 'llama-3.3-70b-versatile', { ...million, serviceTier: 'flex' });
  t.match(groq.priceSource, /^catalog@/);
  t.equal(groq.cost, computeCost(cfg.providers.groq!, 'llama-3.3-70b-versatile', million).cost, "Groq's flex: its on-demand price");
  t.equal(computeCost(cfg.providers.own!, 'm', { ...million, serviceTier: 'flex' }).cost, 10, "linked to Groq's catalog, YAML prices: no default");
  t.equal(computeCost(cfg.providers.oai!, 'm', { ...million, serviceTier: 'flex' }).cost, 5, "OpenAI's catalog: flex at half");
  t.equal(computeCost(cfg.providers.plain!, 'm', { ...million, serviceTier: 'flex' }).cost, 5, 'no catalog: the format default');
  const searches: Usage = { input: 0, cached: null, cacheWrite: null, output: 0, reasoning: null, webSearches: 3 };
  t.equal(computeCost(cfg.providers.ant!, 'm', searches).cost, 0.03, "Anthropic's $10 a thousand searches");
  t.equal(computeCost(cfg.providers.plain!, 'm', searches).cost, 0.03, "OpenAI's, with no catalog");
  t.equal(computeCost(cfg.providers.ds!, 'm', searches).cost, 0, "an Anthropic-format vendor's searches: its price says (none here)");
});

t.test('through the gateway: the tier recorded and priced, fast path, passthrough and translated', async (t) => {
  const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 };
  const up = await listenLoopback(t, async (req, res) => {
    let raw = '';
    for await (const c of req) raw += String(c);
    const body = JSON.parse(raw) as { model: string; stream?: boolean };
    if (req.url!.endsWith('/responses')) {
      const r = { id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: body.model, service_tier: 'flex', usage: { input_tokens: 1000, output_tokens: 100, total_tokens: 1100 },
        output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }] };
      if (body.stream !== true) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 0, response: r })}\n\n`);
    }
    if (body.model === 'fail') return void res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'boom', type: 'server_error' } }));
    const base = { id: 'chatcmpl-1', created: 1, model: body.model, service_tier: 'flex' };
    // `some-chunks` says its tier on the content chunk only, not on the usage chunk (a vendor may do so).
    const last = body.model === 'some-chunks' ? { id: 'chatcmpl-1', created: 1, model: body.model } : base;
    if (body.stream !== true) {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ ...last, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  }, (err, res) => res.writeHead(500).end(String(err)));
  const at = (format: string) => ({ group: 'paid', format, base_url: `http://127.0.0.1:${up.port}/v1`, auth: { type: 'api_key', key: 'k' }, price: { input: 2, output: 8 }, models: { m: { kind: 'llm' }, 'some-chunks': { kind: 'llm' }, fail: { kind: 'llm' } } });
  const gw = await startApp(t, { providers: { oai: at('openai'), resp: at('openai-responses') }, combos: { fb: { strategy: 'fallback', models: ['oai/fail', 'oai/m'] } } });
  const FLEX = (1000 * 2 + 100 * 8) / 1e6 / 2; // 0.0014
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
    return { status: r.status, text: await r.text() };
  };
  const chat = { model: 'oai/m', messages: [{ role: 'user', content: 'hi' }] };
  const calls: [string, unknown][] = [
    ['/v1/chat/completions', chat], ['/v1/chat/completions', { ...chat, stream: true, stream_options: { include_usage: true } }],
    ['/v1/responses', { model: 'resp/m', input: 'hi' }], ['/v1/responses', { model: 'resp/m', input: 'hi', stream: true }],
    ['/v1/messages', { model: 'oai/m', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/messages', { model: 'oai/m', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/chat/completions', { ...chat, model: 'oai/some-chunks', stream: true, stream_options: { include_usage: true } }],
    ['/v1/messages', { model: 'oai/some-chunks', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
  ];
  for (const [path, body] of calls) t.equal((await post(path, body)).status, 200, path);
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows()).length === calls.length);
  for (const r of rows) {
    const name = `${String(r.endpoint)} ${r.stream ? 'streamed' : 'whole'}`;
    t.equal(r.service_tier, 'flex', `${name}: the tier`);
    t.equal(Number(r.cost), FLEX, `${name}: half the standard price`);
  }
  const spans = gw.spans.getFinishedSpans().filter((s) => s.attributes['tollgate.service_tier'] === 'flex' && s.attributes['tollgate.cost_usd'] === FLEX);
  t.ok(spans.length >= calls.length, 'the spans say so');
  const logs = (await (await fetch(`${gw.url}/api/usage/request-logs`)).json()) as { data: { service_tier: string | null; cost: number }[] };
  t.ok(logs.data.length === calls.length && logs.data.every((e) => e.service_tier === 'flex' && e.cost === FLEX), 'the request log says so');

  // A fallback combo whose second member answered at flex: the client's row names the tier its cost was priced at.
  t.equal((await post('/v1/chat/completions', { ...chat, model: 'fb' })).status, 200);
  let combo: Record<string, unknown> | undefined;
  await waitFor(async () => (combo = (await gw.rows("kind = 'combo'"))[0]) !== undefined);
  t.match(combo, { service_tier: 'flex', status: 'success' }, "the combo row: the answering member's tier");
  t.equal(Number(combo!.cost), FLEX, 'its cost the sum of its attempts (the failed one cost nothing)');
});
