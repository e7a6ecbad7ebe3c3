// Usage as providers really report it, where it departs from the simple case (a review of token and cost exactness):
// - Gemini's stream: the chunks before the last carry promptTokenCount alone, the last adds the cached count; the
//   input bucket (prompt - cached) rightly falls then, and keeping the larger bucket counted the cache twice.
// - DeepSeek's cache hits (`prompt_cache_hit_tokens`) and Moonshot's (`cached_tokens`), both top-level; xAI's
//   reasoning outside completion_tokens (in total_tokens). Missed, a cached prompt was billed at the input price and
//   xAI's visible output recorded as 0.
// - A fallback combo streaming to a Chat client: a member that fails right after its start event must still fall back
//   (the role chunk opened the client's stream on the start alone).
// Each: the row, and the usage the client sees, against the hand computation; streamed and not.

import t from 'tap';
import { answerJson as json, answerSse as sse, geminiCandidate as cand, listenLoopback, readJson as read } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';

// Gemini: the final usage, and the chunk before it as the API sends it (promptTokenCount and totalTokenCount only).
const FINAL = { promptTokenCount: 1000, cachedContentTokenCount: 400, candidatesTokenCount: 200, thoughtsTokenCount: 100, totalTokenCount: 1300 };
// OpenAI-compatible vendors' usage, by model name.
const VENDOR_USAGE: Record<string, Record<string, unknown>> = {
  deepseek: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200 },
  kimi: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, cached_tokens: 800 },
  both: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_cache_hit_tokens: 800, prompt_tokens_details: { cached_tokens: 700 } },
  grok: { prompt_tokens: 10120, completion_tokens: 1499, total_tokens: 14428, prompt_tokens_details: { cached_tokens: 128 }, completion_tokens_details: { reasoning_tokens: 2809 } },
  o3: { prompt_tokens: 1000, completion_tokens: 300, total_tokens: 1300, completion_tokens_details: { reasoning_tokens: 200 } },
};

const up = await listenLoopback(t, async (req, res) => {
  const body = await read(req);
  const url = req.url ?? '';
  if (url.includes(':generateContent')) return json(res, { candidates: [cand('Hello there', 'STOP')], usageMetadata: FINAL, modelVersion: 'g' });
  if (url.includes(':streamGenerateContent')) {
    return sse(res, [
      { candidates: [cand('Hello')], usageMetadata: { promptTokenCount: 1000, totalTokenCount: 1000 }, modelVersion: 'g' },
      { candidates: [cand(' there', 'STOP')], usageMetadata: FINAL, modelVersion: 'g' },
    ]);
  }
  if (url.endsWith('/messages')) {
    // The combo's first member: Anthropic's usual mid-stream overload, right after message_start.
    return sse(res, [
      { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, usage: { input_tokens: 600, output_tokens: 1 } } } },
      { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
    ]);
  }
  const model = String(body.model);
  const usage = VENDOR_USAGE[model] ?? { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model };
  if (body.stream === true) {
    return sse(res, [
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { content: `ok from ${model}` }, finish_reason: 'stop' }] },
      { ...base, choices: [], usage },
      'data: [DONE]\n\n',
    ]);
  }
  return json(res, { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: `ok from ${model}` }, finish_reason: 'stop' }], usage });
}, (err, res) => res.writeHead(500).end(String(err)));

const base = `http://127.0.0.1:${up.port}`;
const provider = (format: string, price: Record<string, number>, models: string[]) => ({
  group: 'paid', format, base_url: base, auth: { type: 'api_key', key: 'k' }, price, models: Object.fromEntries(models.map((m) => [m, { kind: 'llm' }])),
});
const gw = await startApp(t, {
  providers: {
    gem: provider('gemini', { input: 1.25, output: 10, cached: 0.125 }, ['g']),
    oai: provider('openai', { input: 0.5, output: 2, cached: 0.05, reasoning: 4 }, ['deepseek', 'kimi', 'both', 'grok', 'o3', 'plain']),
    ant: provider('anthropic', { input: 1, output: 1 }, ['m']),
  },
  combos: { fb: { strategy: 'fallback', models: ['ant/m', 'oai/plain'] } },
});

const post = async (path: string, body: unknown) => {
  const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
};
const lastRow = async (where = "kind = 'request'") => (await gw.rows(where)).at(-1)!;
const buckets = (r: Record<string, unknown>) => ['input_tokens', 'cached_tokens', 'output_tokens', 'reasoning_tokens'].map((c) => (r[c] === null ? null : Number(r[c])));
const streamedUsage = (text: string) =>
  text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { usage?: Record<string, number> }).filter((d) => d.usage).at(-1)?.usage;

t.test("Gemini's stream: the cached count on the last chunk only is not counted twice", async (t) => {
  const ask = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
  // 600 x 1.25 + 400 x 0.125 + 300 x 10 = 750 + 50 + 3000 = 3800 per 1M
  for (const [name, path] of [['whole', ':generateContent'], ['streamed', ':streamGenerateContent?alt=sse']] as const) {
    t.equal((await post(`/v1beta/models/gem/g${path}`, ask)).status, 200);
    const row = await lastRow();
    t.strictSame(buckets(row), [600, 400, 200, 100], `passthrough ${name}: input is prompt minus cached`);
    t.equal(Number(row.total_tokens), 1300, `passthrough ${name}: the provider's total`);
    t.equal(Number(row.cost), 0.0038, `passthrough ${name}: cost`);
  }
  const chat = await post('/v1/chat/completions', { model: 'gem/g', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
  t.strictSame(buckets(await lastRow()), [600, 400, 200, 100], 'translated stream: the row');
  t.equal(streamedUsage(chat.text)?.prompt_tokens, 1000, "the Chat client's prompt_tokens: the provider's 1000, not 1400");
});

t.test('OpenAI-compatible vendors: top-level cache hits, reasoning outside completion_tokens', async (t) => {
  const cases: [string, (number | null)[], number][] = [
    // input, cached, output, reasoning; cost at input 0.5, cached 0.05, output 2, reasoning 4 (per 1M)
    ['deepseek', [200, 800, 100, null], (200 * 0.5 + 800 * 0.05 + 100 * 2) / 1e6],
    ['kimi', [200, 800, 100, null], (200 * 0.5 + 800 * 0.05 + 100 * 2) / 1e6],
    ['both', [300, 700, 100, null], (300 * 0.5 + 700 * 0.05 + 100 * 2) / 1e6],
    ['grok', [9992, 128, 1499, 2809], (9992 * 0.5 + 128 * 0.05 + 1499 * 2 + 2809 * 4) / 1e6],
    ['o3', [1000, null, 100, 200], (1000 * 0.5 + 100 * 2 + 200 * 4) / 1e6],
  ];
  for (const [model, want, cost] of cases) {
    for (const stream of [false, true]) {
      const r = await post('/v1/chat/completions', { model: `oai/${model}`, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream, stream_options: { include_usage: true } } : {}) });
      t.equal(r.status, 200);
      const row = await lastRow();
      t.strictSame(buckets(row), want, `${model} ${stream ? 'streamed' : 'whole'}: buckets`);
      t.equal(Number(row.cost), Number(cost.toFixed(12)), `${model} ${stream ? 'streamed' : 'whole'}: cost`);
    }
  }
  const grok = await post('/v1/messages', { model: 'oai/grok', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  const u = (JSON.parse(grok.text) as { usage: Record<string, number> }).usage;
  t.equal(u.output_tokens, 1499 + 2809, 'an Anthropic client of xAI: output_tokens with the reasoning');
  t.equal(u.cache_read_input_tokens, 128);
  const ds = await post('/v1/messages', { model: 'oai/deepseek', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  const d = (JSON.parse(ds.text) as { usage: Record<string, number> }).usage;
  t.strictSame([d.input_tokens, d.cache_read_input_tokens], [200, 800], 'an Anthropic client of DeepSeek: the cache read apart');
});

t.test('a top-level cache count past prompt_tokens is believed for the whole prompt, not more', async (t) => {
  const { openaiUsage } = await import('../../src/wire/openai/usage.js');
  t.match(openaiUsage({ prompt_tokens: 100, completion_tokens: 10, prompt_cache_hit_tokens: 5000 }), { input: 0, cached: 100, output: 10 });
  t.match(openaiUsage({ prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 150 } }), { input: 0, cached: 100 });
});

t.test('a fallback combo streaming to a Chat client falls back when its first member fails right after starting', async (t) => {
  const r = await post('/v1/chat/completions', { model: 'fb', messages: [{ role: 'user', content: 'hi' }], stream: true });
  t.equal(r.status, 200);
  t.match(r.text, /ok from plain/, "the second member's answer");
  t.notMatch(r.text, /Overloaded/, "not the first member's error");
  t.match(r.text, /data: \[DONE\]/);
  const attempts = await gw.rows("kind = 'attempt'");
  t.strictSame(attempts.slice(-2).map((a) => `${String(a.provider)}:${String(a.status)}`), ['ant:failure', 'oai:success']);
  t.equal((await lastRow("kind = 'combo'")).status, 'success', 'the client request: a success');
});
