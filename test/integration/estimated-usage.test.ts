// What was spent is recorded even when the answer is cut (issue 13 item 6). Against a fake OpenAI upstream (o3:
// o200k_base, counted exactly), for a client of every format (Chat on the fast and the translated path, Responses,
// Anthropic Messages, Gemini): a stream the upstream cuts mid-way, a stream the client aborts mid-way, and a stream
// that finishes without any usage each leave a row with input and output estimated (src/wire/estimate.ts) to the
// exact token count of what was sent and streamed, usage_source 'estimated', priced by computeCost, and counted in
// /api/budgets. A whole answer without usage is estimated the same way; one whose client left once the upstream's 200
// had come (its body not read), on these paths and the same-format one, has its input estimated. A stream whose usage was reported keeps the
// reported figures; one that reports the input only keeps it and has its output estimated, on the fast path as on the
// others; an Anthropic stream cut after message_start keeps its reported input and estimates the output.

import t, { type Test } from 'tap';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { bucketsOf, rowOf, withRow, type Row } from '../helpers/clients.js';
import { upstreamAnswered } from '../helpers/upstream-answered.js';
import { DEFAULT_TEXT, FAKE_USAGE, fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { DEFAULT_USAGE, DEFAULT_WORDS, fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { computeCost } from '../../src/ledger/cost.js';
import { NO_USAGE } from '../../src/ledger/types.js';

const up = await startFakeOpenAI(t);
const anth = await startFakeAnthropic(t);
const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(up.baseUrl, { models: { o3: { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'openai' } } }),
    anth: fakeAnthropicProvider(anth.url),
  },
  budgets: { daily_usd: 1000, monthly_usd: 10_000 },
});
const oai = gw.holder.current.providers.oai!;

const MODEL = 'oai/o3';
// Every client sends one user message 'hi': 3 per message + 'user' + 'hi' + 3 for the reply priming (OpenAI Cookbook).
const INPUT = 3 + countTokens('user') + countTokens('hi') + 3;

type Format = 'chat' | 'chat-translated' | 'responses' | 'messages' | 'gemini';
const FORMATS: Format[] = ['chat', 'chat-translated', 'responses', 'messages', 'gemini'];

/** The path, body and endpoint of a request for `model` from a client of `format`. */
function requestOf(format: Format, stream: boolean, model = MODEL): { path: string; body: Record<string, unknown>; endpoint: string } {
  const messages = [{ role: 'user', content: 'hi' }];
  switch (format) {
    case 'chat':
      return { path: '/v1/chat/completions', body: { model, messages, stream }, endpoint: 'chat.completions' };
    case 'chat-translated':
      // `(auto)` forces the translated path and, for the openai thinking family, sends nothing (docs/thinking.md).
      return { path: '/v1/chat/completions', body: { model: `${model}(auto)`, messages, stream }, endpoint: 'chat.completions' };
    case 'responses':
      return { path: '/v1/responses', body: { model, input: 'hi', stream }, endpoint: 'responses' };
    case 'messages':
      return { path: '/v1/messages', body: { model, max_tokens: 100, messages, stream }, endpoint: 'messages' };
    case 'gemini':
      return {
        path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
        endpoint: 'generate_content',
      };
  }
}

/** Send the request; read the whole answer, or abort once `abortOn` has reached the client. Returns the request id. */
async function send(format: Format, stream: boolean, opts: { abortOn?: string; model?: string } = {}): Promise<string> {
  const { path, body } = requestOf(format, stream, opts.model);
  const ac = new AbortController();
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
  const id = String(res.headers['x-request-id']);
  let seen = '';
  try {
    for await (const chunk of res.body) {
      seen += String(chunk);
      if (opts.abortOn !== undefined && seen.includes(opts.abortOn)) ac.abort();
    }
  } catch {
    // the abort
  }
  return id;
}

/**
 * Send a non-streamed request and leave once the upstream's status has reached the gateway (the answer's body not
 * yet); the request's one usage row.
 */
async function leaveAfterStatus(t: Test, format: Format, upstream: string, model?: string): Promise<Row> {
  const { path, body } = requestOf(format, false, model);
  const { row } = await withRow(gw, t, async () => {
    const answered = upstreamAnswered(upstream);
    const ac = new AbortController();
    const asked = request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
    t.equal(await answered, 200, 'the upstream answered 200');
    ac.abort();
    await asked.catch(() => undefined);
  });
  return row;
}

/** The row is estimated: exact input and output counts, no cache buckets, priced by computeCost. */
function checkEstimated(t: Test, row: Row, output: number): void {
  t.equal(row.usage_source, 'estimated', "usage_source 'estimated'");
  t.same(bucketsOf(row), [INPUT, null, null, output, null, INPUT + output], 'input = the request counted, output = the text streamed, counted');
  const cost = computeCost(oai, 'o3', { ...NO_USAGE, input: INPUT, output });
  t.ok(cost.cost > 0, 'a paid provider: the estimate costs something');
  t.equal(Number(row.cost), cost.cost, 'cost = computeCost of the estimated buckets');
  t.equal(Number(row.list_cost), cost.listCost);
}

const budgets = async (): Promise<number> => ((await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { spent: number } }).daily.spent;

for (const format of FORMATS) {
  t.test(`${format} client`, async (t) => {
    await t.test('the upstream cuts the stream after two words: failure row, estimated', async (t) => {
      up.next({ kind: 'cut', chunks: 2 });
      const row = await rowOf(gw, await send(format, true));
      t.match(row, { endpoint: requestOf(format, true).endpoint, status: 'failure', http_status: 200 });
      checkEstimated(t, row, countTokens(DEFAULT_WORDS.slice(0, 2).join('')));
    });

    await t.test('the client aborts after three words: aborted row, estimated', async (t) => {
      up.next({ kind: 'stall', chunks: 3 });
      const row = await rowOf(gw, await send(format, true, { abortOn: ' the' }));
      t.match(row, { status: 'aborted', error_type: 'client_closed' });
      checkEstimated(t, row, countTokens(DEFAULT_WORDS.slice(0, 3).join('')));
    });

    await t.test('a stream that finishes without any usage: success row, estimated', async (t) => {
      up.next({ kind: 'ok', omitUsage: true });
      const row = await rowOf(gw, await send(format, true));
      t.match(row, { status: 'success', stream: true });
      checkEstimated(t, row, countTokens(DEFAULT_WORDS.join('')));
    });

    await t.test('a whole answer without usage: success row, estimated', async (t) => {
      up.next({ kind: 'ok', omitUsage: true });
      const row = await rowOf(gw, await send(format, false));
      t.match(row, { status: 'success', stream: false });
      checkEstimated(t, row, countTokens(DEFAULT_WORDS.join('')));
    });

    await t.test("a whole answer the client leaves after the upstream's 200 came: aborted row, input estimated", async (t) => {
      // Before: 0 tokens and usage_source none, although a stream left the same way had its input estimated.
      up.next({ kind: 'stall', chunks: 0 }); // the 200 and half the JSON, then nothing more
      const row = await leaveAfterStatus(t, format, up.baseUrl);
      t.match(row, { endpoint: requestOf(format, false).endpoint, stream: false, status: 'aborted', error_type: 'client_closed' });
      checkEstimated(t, row, 0);
    });

    // One rule on every path (src/pipeline/outcome.ts settleEstimate): what was not reported is estimated, bucket by
    // bucket. The fast path used to keep a partial report as it came (output unknown), the translated path estimated.
    for (const stream of [true, false]) {
      await t.test(`${stream ? 'a stream' : 'a whole answer'} whose usage names the input only: input kept, output estimated`, async (t) => {
        up.next({ kind: 'ok', inputOnlyUsage: true });
        const row = await rowOf(gw, await send(format, stream));
        const output = countTokens(DEFAULT_WORDS.join(''));
        t.match(row, { status: 'success', usage_source: 'estimated' });
        t.same(bucketsOf(row), [DEFAULT_USAGE.prompt_tokens, null, null, output, null, DEFAULT_USAGE.prompt_tokens + output], 'the reported input, the streamed output counted');
      });
    }

    await t.test('a stream whose usage was reported keeps the reported figures', async (t) => {
      up.next({ kind: 'ok' });
      const row = await rowOf(gw, await send(format, true));
      const u = DEFAULT_USAGE;
      const cached = u.cached_tokens!;
      const reasoning = u.reasoning_tokens!;
      t.match(row, { status: 'success', usage_source: 'reported' });
      t.same(bucketsOf(row), [u.prompt_tokens - cached, cached, null, u.completion_tokens - reasoning, reasoning, u.prompt_tokens + u.completion_tokens], 'the reported buckets');
    });
  });
}

t.test('an Anthropic stream cut after message_start: the reported input is kept, only the output is estimated', async (t) => {
  anth.next({ kind: 'cut', events: 5 }); // message_start, content_block_start, ping, two text deltas
  const row = await rowOf(gw, await send('chat', true, { model: 'anth/claude-sonnet-4-5' }));
  t.match(row, { status: 'failure', usage_source: 'estimated' });
  // Claude is counted as o200k_base x 1.2 (docs/recording.md).
  const output = Math.round(countTokens(DEFAULT_TEXT.slice(0, 2).join('')) * 1.2);
  t.same(bucketsOf(row), [FAKE_USAGE.input_tokens, FAKE_USAGE.cache_read_input_tokens, FAKE_USAGE.cache_creation_input_tokens, output, null,
    FAKE_USAGE.input_tokens + FAKE_USAGE.cache_read_input_tokens + FAKE_USAGE.cache_creation_input_tokens + output]);
  const cost = computeCost(gw.holder.current.providers.anth!, 'claude-sonnet-4-5', {
    input: FAKE_USAGE.input_tokens, cached: FAKE_USAGE.cache_read_input_tokens, cacheWrite: FAKE_USAGE.cache_creation_input_tokens, output, reasoning: null,
  });
  t.equal(Number(row.cost), cost.cost);
});

t.test("a whole answer on the same-format path the client leaves after the upstream's 200 came: input estimated", async (t) => {
  anth.next({ kind: 'stall', events: 0 }); // the 200 and half the JSON, then nothing more
  const row = await leaveAfterStatus(t, 'messages', anth.url, 'anth/claude-sonnet-4-5');
  t.match(row, { endpoint: 'messages', provider: 'anth', stream: false, status: 'aborted', error_type: 'client_closed', usage_source: 'estimated' });
  // Claude is counted as o200k_base x 1.2 (docs/recording.md).
  const input = Math.round(INPUT * 1.2);
  t.same(bucketsOf(row), [input, null, null, 0, null, input], 'the input counted from the body sent; no output read');
  t.equal(Number(row.cost), computeCost(gw.holder.current.providers.anth!, 'claude-sonnet-4-5', { ...NO_USAGE, input, output: 0 }).cost);
});

t.test('/api/budgets counts an estimated row', async (t) => {
  const before = await budgets();
  up.next({ kind: 'cut', chunks: 2 });
  const row = await rowOf(gw, await send('responses', true));
  t.equal(row.usage_source, 'estimated');
  const after = await budgets();
  t.ok(Number(row.cost) > 0);
  t.ok(Math.abs(after - before - Number(row.cost)) < 1e-9, `spend grew by the estimate's cost (${after - before} = ${String(row.cost)})`);
});
