// Anthropic's cache writes come in two lifetimes (`cache_control: {type: 'ephemeral', ttl: '1h'}` or the default five
// minutes); the hour-long ones bill at twice the input price, the five-minute ones at 1.25 times
// (`cache_creation.ephemeral_1h_input_tokens` / `ephemeral_5m_input_tokens`, inside cache_creation_input_tokens).
// Priced at the one cache-write rate, a request writing 600 tokens for an hour was billed 37.5 % low on them. Here:
// the usage parse and merge, the price (default, configured, tiers), and a request through the gateway recorded four
// ways that agree (row with its cache_write_1h_tokens, the cost metric, the span, the request log), the passthrough
// and a translated client alike.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { anthropicUsage, mergeUsage, renderUsage } from '../../src/wire/anthropic/usage.js';
import { listCostPico, hourWritePrice } from '../../src/ledger/cost.js';
import { addUsage, totalTokens, type Usage } from '../../src/ledger/types.js';
import type { Price } from '../../src/config/types.js';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic, type FakeAnthropicUsage } from '../helpers/fake-anthropic.js';
import { waitFor } from '../helpers/wait.js';

const SONNET: Price = { input: 3, output: 15, cached: 0.3, cache_write: 3.75 };

t.test('the usage: the hour-long writes are a part of the cache writes, never more, merged as the larger', async (t) => {
  const u = anthropicUsage({
    input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 1000, output_tokens: 9,
    cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 },
  })!;
  t.strictSame(u, { input: 20, cached: 5, cacheWrite: 1000, output: 9, reasoning: null, cacheWrite1h: 600 });
  t.equal(totalTokens(u), 1034, 'not counted twice in the total');
  t.equal(anthropicUsage({ input_tokens: 1, cache_creation_input_tokens: 10, output_tokens: 1, cache_creation: { ephemeral_1h_input_tokens: 50 } })!.cacheWrite1h, 10, 'a part larger than its whole is the whole');
  t.notOk('cacheWrite1h' in anthropicUsage({ input_tokens: 1, cache_creation_input_tokens: 10, output_tokens: 1 })!, 'no lifetimes reported: none kept');
  t.notOk('cacheWrite1h' in anthropicUsage({ input_tokens: 1, output_tokens: 1, cache_creation: { ephemeral_1h_input_tokens: 5 } })!, 'no cache writes: no part of them');
  t.equal(anthropicUsage({ input_tokens: 1, cache_creation_input_tokens: 10, output_tokens: 1, cache_creation: { ephemeral_1h_input_tokens: -3 } })!.cacheWrite1h, undefined, 'a bad count is not a count');

  const start = anthropicUsage({ input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 5, output_tokens: 1, cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 } });
  const delta = anthropicUsage({ output_tokens: 9 });
  t.equal(mergeUsage(start, delta)!.cacheWrite1h, 600, "message_delta without the lifetimes keeps message_start's");
  const fuller = anthropicUsage({ input_tokens: 20, cache_creation_input_tokens: 1000, output_tokens: 9, cache_creation: { ephemeral_1h_input_tokens: 0 } });
  t.equal(mergeUsage(start, fuller)!.cacheWrite1h, 600, 'a falling report is not believed');

  const a: Usage = { input: 1, cached: null, cacheWrite: 100, output: 1, reasoning: null, cacheWrite1h: 60 };
  const b: Usage = { input: 1, cached: null, cacheWrite: 50, output: 1, reasoning: null };
  t.equal(addUsage(a, b).cacheWrite1h, 60, "a combo's attempts add up");
  t.equal(addUsage(a, a).cacheWrite1h, 120);
  t.notOk('cacheWrite1h' in addUsage(b, b), 'none in either: none');

  t.strictSame(renderUsage(u), {
    input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 5, output_tokens: 9,
    cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 },
  }, 'rendered back as the API reports it');
  t.notOk('cache_creation' in renderUsage(b), 'not invented when unknown');
});

t.test('the price: twice the input unless configured, a tier included', async (t) => {
  const u: Usage = { input: 20, cached: 5, cacheWrite: 1000, output: 9, reasoning: null, cacheWrite1h: 600 };
  // 20 x 3 + 5 x 0.3 + 400 x 3.75 + 600 x 6 + 9 x 15 = 60 + 1.5 + 1500 + 3600 + 135 = 5296.5 per 1M tokens.
  t.equal(listCostPico(u, SONNET), 5_296_500_000, 'the hour-long writes at twice the input price');
  t.equal(listCostPico({ ...u, cacheWrite1h: 0 }, SONNET), 60e6 + 1.5e6 + 3750e6 + 135e6, 'none for an hour: the one rate, as before');
  t.equal(listCostPico({ ...u, cacheWrite1h: undefined }, SONNET), 60e6 + 1.5e6 + 3750e6 + 135e6, 'no lifetimes reported: the one rate');
  t.equal(listCostPico(u, { ...SONNET, cache_write_1h: 5 }), 60e6 + 1.5e6 + 1500e6 + 3000e6 + 135e6, 'a configured cache_write_1h wins');
  // Above 1,000 prompt tokens (20 + 5 + 1000 = 1025), input 6: the hour-long writes at 12.
  const tiered: Price = { ...SONNET, tiers: [{ above_input_tokens: 1000, input: 6, cache_write: 7.5 }] };
  t.equal(listCostPico(u, tiered), 20 * 6e6 + 1.5e6 + 400 * 7.5e6 + 600 * 12e6 + 135e6, "a tier's input price doubles for them too");
  t.equal(hourWritePrice({ input: 9_000, output: 1 }), 9_999, 'bounded by the config ceiling, so a row stays within its cost column');
});

t.test('through the gateway: row, metric, span and request log agree, passthrough and translated', async (t) => {
  const up = await startFakeAnthropic(t);
  const gw = await startApp(t, { providers: { anth: fakeAnthropicProvider(up.url) } });
  const usage: FakeAnthropicUsage = { input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 1000, cache_creation_1h: 600, output_tokens: 9 };
  const COST = 0.0052965; // the hand computation above

  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const ask = { model: 'anth/claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };

  up.next({ kind: 'ok', usage });
  const plain = await anthropic.messages.create(ask);
  t.strictSame(plain.usage.cache_creation, { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 }, 'the passthrough client sees the lifetimes');
  up.next({ kind: 'ok', usage });
  const streamed = await anthropic.messages.stream(ask).finalMessage();
  t.equal(streamed.usage.cache_creation?.ephemeral_1h_input_tokens, 600);
  up.next({ kind: 'ok', usage });
  const chat = await openai.chat.completions.create({ model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.usage?.prompt_tokens, 1025, 'the OpenAI client: its prompt tokens cover the cache reads and writes');
  up.next({ kind: 'ok', usage });
  for await (const _ of await openai.chat.completions.create({ model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })) { /* read whole */ }

  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows()).length === 4);
  for (const r of rows) {
    const name = `${String(r.endpoint)} ${r.stream ? 'streamed' : 'whole'}`;
    t.equal(Number(r.cache_write_tokens), 1000, `${name}: cache writes`);
    t.equal(Number(r.cache_write_1h_tokens), 600, `${name}: of which for an hour`);
    t.equal(Number(r.cost), COST, `${name}: cost with the hour-long writes at twice the input price`);
  }
  const metric = (await gw.metrics()).split('\n').filter((l) => l.startsWith('tollgate_cost_usd_total{')).reduce((s, l) => s + Number(l.split(' ').at(-1)), 0);
  t.equal(Number(metric.toFixed(9)), Number((4 * COST).toFixed(9)), 'the cost metric adds the same four costs');
  const servers = gw.spans.getFinishedSpans().filter((s) => s.attributes['tollgate.cost_usd'] !== undefined && s.attributes['tollgate.usage.cache_write_1h_tokens'] !== undefined);
  t.ok(servers.length >= 4, 'the spans carry the hour-long writes');
  for (const s of servers) {
    t.equal(s.attributes['tollgate.usage.cache_write_1h_tokens'], 600);
    t.equal(s.attributes['tollgate.cost_usd'], COST);
  }
  const logs = (await (await fetch(`${gw.url}/api/usage/request-logs`)).json()) as { data: { cost: number; usage: Record<string, unknown> }[] };
  t.equal(logs.data.length, 4);
  for (const e of logs.data) {
    t.equal(e.usage.cache_write_1h, 600, 'the request log shows them');
    t.equal(e.cost, COST);
  }
});
