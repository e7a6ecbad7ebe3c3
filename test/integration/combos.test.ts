// Combos through the official `openai` client against three fake OpenAI upstreams (providers a, b, c) that fail on
// command: 500, 429 with Retry-After, a quota-exhausted 429, a timeout before the first byte, a stall before the
// first byte (also after keep-alive comments), a cut after bytes. Each case shows the order of attempts (which
// upstream received what), the final answer, one row per attempt tied to the client's row by parent_id and the
// combo's name, the client row's totals as the sum of its attempts, the cooldowns in /api/quota and /metrics, and the
// totals in /api/usage.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { DEFAULT_WORDS, fakeProvider, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { PNG, bucketsOf, spyFetch, attemptRowsOf } from '../helpers/clients.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

const fakes = { a: await startFakeOpenAI(t), b: await startFakeOpenAI(t), c: await startFakeOpenAI(t) };
// Prices differ per provider so each attempt's cost names its provider. Stall and request timeouts are short so a
// silent upstream is given up on quickly.
const PRICES = { a: { input: 1, output: 2, cached: 0.5 }, b: { input: 3, output: 6, cached: 1 }, c: { input: 10, output: 20, cached: 5 } };
const provider = (id: keyof typeof fakes, models: Record<string, unknown> = { m: { kind: 'llm' } }) =>
  fakeProvider(fakes[id].baseUrl, { name: `Fake ${id}`, price: PRICES[id], timeouts: { connect_s: 2, stall_s: 0.4, request_s: 0.4 }, models });

const gw = await startApp(t, {
  providers: {
    a: provider('a', { m: { kind: 'llm' }, text: { kind: 'llm', capabilities: ['tools'] } }),
    b: provider('b', { m: { kind: 'llm' }, vis: { kind: 'llm', capabilities: ['vision', 'tools'] } }),
    c: provider('c'),
  },
  routing: { cooldown: { initial_s: 5, max_s: 60, multiplier: 2 } },
  combos: {
    smart: { strategy: 'fallback', models: ['a/m', 'b/m', 'c/m'] },
    rr: { strategy: 'round-robin', models: ['a/m', 'b/m', 'c/m'] },
    cap: { strategy: 'capacity', models: ['a/text', 'b/vis'] },
  },
});
const spy = spyFetch();
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: spy.fetch });
const router = gw.app.tollgate.router;

// DEFAULT_USAGE (prompt 11 of which 3 cached, completion 7 of which 2 reasoning) as buckets: input 8, cached 3,
// cache write null, output 5, reasoning 2; total 18. Cost at a provider's price, in USD.
const ANSWER = DEFAULT_WORDS.join('');
const BUCKETS = [8, 3, null, 5, 2, 18];
const costAt = (p: { input: number; output: number; cached: number }) => (8 * p.input + 3 * p.cached + 5 * p.output + 2 * p.output) / 1e6;

const counts = () => ({ a: fakes.a.received.length, b: fakes.b.received.length, c: fakes.c.received.length });
const delta = (before: Record<string, number>) => {
  const now = counts();
  return { a: now.a - before.a!, b: now.b - before.b!, c: now.c - before.c! };
};
function resetCooldowns(): void {
  for (const id of ['a#default', 'b#default', 'c#default']) router.cooldowns.succeed(id);
}
const ask = (model: string) => ({ model, messages: [{ role: 'user' as const, content: 'hello' }] });

/** The client row of the last request and its attempt rows (by attempt number), waiting until they have landed. */
const rowsOf = (requestId: string, attempts: number) => attemptRowsOf(gw, requestId, attempts);
const money = (v: unknown) => Number(Number(v).toFixed(12));

t.test('/v1/models lists each combo by its bare name', async (t) => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  t.ok(ids.includes('smart') && ids.includes('rr') && ids.includes('cap'), ids.join(', '));
  t.ok(ids.includes('a/m'), 'models are still listed');
});

t.test('fallback: 500 then 429 with Retry-After, then an answer; one row per attempt; cooldowns skip the failed', async (t) => {
  resetCooldowns();
  const before = counts();
  fakes.a.next({ kind: 'error', status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
  fakes.b.next({ kind: 'error', status: 429, body: { error: { message: 'slow down', type: 'rate_limit_exceeded' } }, headers: { 'retry-after': '20' } });
  const res = await client.chat.completions.create(ask('smart'));
  t.equal(res.choices[0]?.message.content, ANSWER, "c's answer reaches the client");
  t.equal(res.model, 'c/m', 'shown under the model that served it');
  t.same(delta(before), { a: 1, b: 1, c: 1 }, 'a, then b, then c were each tried once');

  const id = spy.last.headers.get('x-request-id')!;
  t.equal(spy.last.headers.get('x-tollgate-requested-model'), 'smart', 'the name asked for, in x-tollgate-requested-model');
  const { parent, attempts } = await rowsOf(id, 3);
  t.same(attempts.map((r) => [r.kind, Number(r.attempt), r.provider, r.model, r.status, Number(r.http_status), r.combo]), [
    ['attempt', 1, 'a', 'a/m', 'failure', 500, 'smart'],
    ['attempt', 2, 'b', 'b/m', 'failure', 429, 'smart'],
    ['attempt', 3, 'c', 'c/m', 'success', 200, 'smart'],
  ], 'the order of attempts, each its own row');
  t.same(attempts.map((r) => r.parent_id), [id, id, id], "every attempt carries the client's request id");
  t.same(bucketsOf(attempts[2]!), BUCKETS, "the answering attempt has c's usage");
  t.equal(money(attempts[2]!.cost), money(costAt(PRICES.c)), "priced at c's price");
  t.equal(Number(attempts[0]!.total_tokens), 0, 'a failed attempt reported no tokens');
  t.same([parent.kind, parent.combo, parent.status, Number(parent.http_status), parent.model, parent.parent_id], ['combo', 'smart', 'success', 200, 'c/m', null],
    'the client row: kind combo, the combo, the answering model, no parent');
  t.same(bucketsOf(parent), BUCKETS, "the client row's buckets are the sum of its attempts'");
  t.equal(money(parent.cost), money(attempts.reduce((s, r) => s + Number(r.cost), 0)), "and its cost the sum of theirs");

  // Cooldowns: a for the initial 5 s, b for at least its Retry-After (20 s); both visible in /api/quota and /metrics.
  const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; cooldown: { cooling: boolean; remaining_s: number; connections: { reason: string; failures: number }[] } }[] };
  const cd = Object.fromEntries(quota.providers.map((p) => [p.id, p.cooldown]));
  t.ok(cd.a!.cooling && cd.a!.remaining_s > 0 && cd.a!.remaining_s <= 5, `a cools about 5 s (${cd.a!.remaining_s})`);
  t.equal(cd.a!.connections[0]!.reason, '500');
  t.ok(cd.b!.cooling && cd.b!.remaining_s > 15 && cd.b!.remaining_s <= 20, `b cools for its Retry-After, 20 s (${cd.b!.remaining_s})`);
  t.equal(cd.b!.connections[0]!.reason, '429');
  t.notOk(cd.c!.cooling, 'c, which answered, is not cooling');
  const text = await gw.metrics();
  t.ok(metricValue(text, 'tollgate_provider_cooldown_seconds', { provider: 'b' }) > 15, 'the cooldown gauge shows b');
  t.equal(metricValue(text, 'tollgate_provider_cooldown_seconds', { provider: 'c' }), 0);
  t.equal(metricValue(text, 'tollgate_cooldowns_total', { provider: 'a', reason: '500' }), 1);
  t.equal(metricValue(text, 'tollgate_cooldowns_total', { provider: 'b', reason: '429' }), 1);

  // The next request skips a and b while they cool down.
  const before2 = counts();
  const again = await client.chat.completions.create(ask('smart'));
  t.equal(again.choices[0]?.message.content, ANSWER);
  t.same(delta(before2), { a: 0, b: 0, c: 1 }, 'cooling members are skipped');
  const second = await rowsOf(spy.last.headers.get('x-request-id')!, 1);
  t.same(second.attempts.map((r) => [Number(r.attempt), r.provider]), [[1, 'c']], 'one attempt, numbered 1');

  // /api/usage counts client requests once, and the tokens and cost of every attempt.
  const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as {
    summary: { requests: number; tokens: number; cost: number }; byModel: { model: string; requests: number; tokens: number; cost: number }[];
  };
  const byModel = Object.fromEntries(usage.byModel.map((m) => [m.model, m]));
  t.equal(usage.summary.requests, 2, 'two client requests, however many attempts');
  t.same([byModel['a/m']?.requests, byModel['a/m']?.tokens], [1, 0], 'a served one (failed) call with no tokens');
  t.same([byModel['c/m']?.requests, byModel['c/m']?.tokens], [2, 36], 'c served two calls, 18 tokens each');
  t.equal(usage.summary.tokens, 36, 'tokens of every attempt, once');
  t.equal(money(usage.summary.cost), money(2 * costAt(PRICES.c)));
});

t.test('the metrics count the client request once and the tokens and cost of every attempt', async (t) => {
  const text = await gw.metrics();
  t.equal(metricValue(text, 'tollgate_combo_requests_total', { combo: 'smart', status: 'success' }), 2);
  // Under the member that answered, as tollgate_requests_total counts them (TollgateProviderFailing subtracts them).
  t.equal(metricValue(text, 'tollgate_combo_requests_total', { combo: 'smart', provider: 'c', model: 'c/m', status: 'success' }), 2, 'labelled with the member that answered');
  t.equal(metricValue(text, 'tollgate_combo_attempts_total', { combo: 'smart' }), 4, '3 + 1 attempts');
  t.equal(metricValue(text, 'tollgate_combo_attempts_total', { combo: 'smart', provider: 'b', status: 'failure' }), 1);
  t.equal(metricValue(text, 'tollgate_requests_total', {}), 2, 'two client requests, whatever their attempts');
  t.equal(metricValue(text, 'tollgate_tokens_total', {}), 36, 'the tokens of every attempt');
  t.equal(Number(metricValue(text, 'tollgate_cost_usd_total', {}).toFixed(12)), money(2 * costAt(PRICES.c)));
});

t.test('spans: the client span is named after the combo, one child span per attempt with its own usage', async (t) => {
  resetCooldowns();
  gw.spans.reset();
  fakes.a.next({ kind: 'error', status: 503, body: { error: { message: 'down' } } });
  await client.chat.completions.create(ask('smart'));
  const id = spy.last.headers.get('x-request-id')!;
  await waitFor(() => gw.spans.getFinishedSpans().some((s) => s.name === 'chat smart'));
  const spans = gw.spans.getFinishedSpans();
  const server = spans.find((s) => s.name === 'chat smart')!;
  const children = spans.filter((s) => s.parentSpanContext?.spanId === server.spanContext().spanId);
  t.equal(children.length, 2, 'two attempts, two child spans');
  const byAttempt = children.sort((x, y) => Number(x.attributes['tollgate.attempt']) - Number(y.attributes['tollgate.attempt']));
  t.same(byAttempt.map((s) => [s.attributes['tollgate.attempt'], s.attributes['tollgate.provider'], s.attributes['http.response.status_code'], s.attributes['tollgate.parent_request_id']]),
    [[1, 'a', 503, id], [2, 'b', 200, id]]);
  t.equal(byAttempt[1]!.attributes['tollgate.usage.total_tokens'], 18, "the answering attempt's tokens on its span");
  t.equal(server.attributes['tollgate.usage.total_tokens'], 18, "the client span's total is the sum");
  t.equal(server.attributes['tollgate.kind'], 'combo');
});

t.test('a quota-exhausted provider is moved past and cooled for the longest wait', async (t) => {
  resetCooldowns();
  const before = counts();
  fakes.a.next({ kind: 'error', status: 429, body: { error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } } });
  const res = await client.chat.completions.create(ask('smart'));
  t.equal(res.choices[0]?.message.content, ANSWER);
  t.same(delta(before), { a: 1, b: 1, c: 0 });
  const s = router.cooldowns.cooling('a#default');
  t.equal(s?.reason, 'quota_exhausted');
  t.ok(s !== null && s.until - Date.now() > 55_000, 'cooled for max_s (60 s)');
});

t.test('a timeout before the first byte moves on (not streamed, and streamed: headers, then silence)', async (t) => {
  resetCooldowns();
  let before = counts();
  fakes.a.next({ kind: 'ok', delayMs: 1500 });
  const res = await client.chat.completions.create(ask('smart'));
  t.equal(res.choices[0]?.message.content, ANSWER, 'b answered after a timed out');
  t.same(delta(before), { a: 1, b: 1, c: 0 });
  let rows = await rowsOf(spy.last.headers.get('x-request-id')!, 2);
  t.equal(rows.attempts[0]!.error_type, 'TOLLGATE_ERR_UPSTREAM_TIMEOUT');

  resetCooldowns();
  before = counts();
  fakes.a.next({ kind: 'silent' });
  const stream = await client.chat.completions.create({ ...ask('smart'), stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.equal(text, ANSWER, 'the stream came from b');
  t.equal(usage?.total_tokens, 18);
  t.same(delta(before), { a: 1, b: 1, c: 0 });
  rows = await rowsOf(spy.last.headers.get('x-request-id')!, 2);
  t.same(rows.attempts.map((r) => [r.provider, r.status, r.error_type]), [['a', 'failure', 'TOLLGATE_ERR_UPSTREAM_STALL'], ['b', 'success', '']]);
  t.equal(rows.parent.stream, true);
  t.ok(rows.parent.ttft_ms !== null && Number(rows.parent.ttft_ms) >= 400, `time to first token includes the stalled try (${String(rows.parent.ttft_ms)} ms)`);
});

t.test('an upstream\'s keep-alive comments before its first output do not hold the combo on it', async (t) => {
  resetCooldowns();
  const before = counts();
  fakes.a.next({ kind: 'silent', comments: ['keep-alive', 'OPENROUTER PROCESSING'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask('smart'), stream: true }),
  });
  const text = await res.text();
  t.equal(res.status, 200);
  t.same(delta(before), { a: 1, b: 1, c: 0 }, 'a stalled after its comments; b answered');
  t.notMatch(text, /^:/m, 'a\'s comments were not sent: they would have opened the stream before a failed');
  const words = [...text.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join('');
  t.equal(words, ANSWER, 'the answer is b\'s');
  const rows = await rowsOf(res.headers.get('x-request-id')!, 2);
  t.same(rows.attempts.map((r) => [r.provider, r.status, r.error_type]), [['a', 'failure', 'TOLLGATE_ERR_UPSTREAM_STALL'], ['b', 'success', '']]);
});

t.test('never after the client has received bytes: a stream cut mid-way is not retried', async (t) => {
  resetCooldowns();
  const before = counts();
  fakes.a.next({ kind: 'cut', chunks: 2 });
  const stream = await client.chat.completions.create({ ...ask('smart'), stream: true });
  let text = '';
  const err = await (async () => {
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    } catch (e) {
      return e;
    }
    return null;
  })();
  t.equal(text, DEFAULT_WORDS.slice(0, 2).join(''), 'the bytes a sent reached the client');
  t.ok(err instanceof Error, 'then the stream ended with an error');
  t.same(delta(before), { a: 1, b: 0, c: 0 }, 'no other member was tried');
  const rows = await rowsOf(spy.last.headers.get('x-request-id')!, 1);
  t.same([rows.parent.status, rows.attempts.length], ['failure', 1]);
  t.ok(router.cooldowns.cooling('a#default'), 'a cools down all the same');
});

t.test('a request the upstream refuses as bad (400) is not retried elsewhere', async (t) => {
  resetCooldowns();
  const before = counts();
  fakes.a.next({ kind: 'error', status: 400, body: { error: { message: 'bad temperature', type: 'invalid_request_error', param: 'temperature' } } });
  const err = await client.chat.completions.create(ask('smart')).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.BadRequestError, 'the 400 reaches the client');
  t.match((err as InstanceType<typeof OpenAI.APIError>).message, /bad temperature/);
  t.same(delta(before), { a: 1, b: 0, c: 0 });
  t.equal(router.cooldowns.cooling('a#default'), null, 'and the provider is not cooled');
});

t.test('when no member is left the client gets the last upstream error with its status and Retry-After', async (t) => {
  resetCooldowns();
  fakes.a.next({ kind: 'error', status: 500, body: { error: { message: 'a down' } } });
  fakes.b.next({ kind: 'error', status: 503, body: { error: { message: 'b down' } } });
  fakes.c.next({ kind: 'error', status: 429, body: { error: { message: 'c is rate limited', type: 'rate_limit_exceeded' } }, headers: { 'retry-after': '9' } });
  const err = await client.chat.completions.create(ask('smart')).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.RateLimitError, 'the last failure: 429');
  const e = err as InstanceType<typeof OpenAI.APIError>;
  t.match(e.message, /c is rate limited/, "c's own error body");
  t.equal(e.headers?.get('retry-after'), '9', 'with its Retry-After');
  const rows = await rowsOf(spy.last.headers.get('x-request-id')!, 3);
  t.same([rows.parent.status, Number(rows.parent.http_status), rows.parent.error_type], ['failure', 429, '429']);

  // All three now cool: the next request is refused at once, with the wait until the first is back.
  const before = counts();
  const refused = await client.chat.completions.create(ask('smart')).catch((e: unknown) => e);
  t.ok(refused instanceof OpenAI.InternalServerError && (refused as InstanceType<typeof OpenAI.APIError>).status === 503);
  t.match((refused as InstanceType<typeof OpenAI.APIError>).error, { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' });
  const wait = Number((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'));
  t.ok(wait >= 1 && wait <= 5, `retry-after ${wait}: a's 5 s cooldown ends first`);
  t.same(delta(before), { a: 0, b: 0, c: 0 }, 'no upstream was called');
});

t.test('round-robin rotates the first member per request, falling back on failure', async (t) => {
  resetCooldowns();
  const firsts: string[] = [];
  for (let i = 0; i < 3; i++) {
    await client.chat.completions.create(ask('rr'));
    const { attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 1);
    firsts.push(String(attempts[0]!.provider));
  }
  t.same([...firsts].sort(), ['a', 'b', 'c'], `each member went first once (${firsts.join(', ')})`);
  t.equal(new Set(firsts).size, 3);
  // Starting at the member after the last one, a failure falls back to the next in turn.
  const next = { a: 'b', b: 'c', c: 'a' }[firsts[2]!] as 'a' | 'b' | 'c';
  fakes[next].next({ kind: 'error', status: 502, body: { error: { message: 'bad gateway' } } });
  await client.chat.completions.create(ask('rr'));
  const { attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 2);
  t.same(attempts.map((r) => r.status), ['failure', 'success']);
  t.equal(attempts[0]!.provider, next, `the rotation's next member (${next}) went first`);
});

// A member cooling down is passed over, and its turns are shared by the others: rotated before the cooling one was
// passed over, its turns all went to the member after it (b served three of four requests, c one).
t.test('round-robin: the members usable now take turns while one cools down', async (t) => {
  resetCooldowns();
  router.cooldowns.fail('a#default', { reason: '503', retryAfterMs: 60_000 });
  t.teardown(resetCooldowns);
  const before = counts();
  for (let i = 0; i < 4; i++) await client.chat.completions.create(ask('rr'));
  t.same(delta(before), { a: 0, b: 2, c: 2 }, 'b and c alike, a passed over');
});

t.test('capacity: a request with an image goes first to the model that takes images', async (t) => {
  resetCooldowns();
  let before = counts();
  await client.chat.completions.create(ask('cap'));
  t.same(delta(before), { a: 1, b: 0, c: 0 }, 'text only: config order (a/text first)');

  before = counts();
  const withImage = {
    model: 'cap',
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'what is this?' }, { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${PNG}` } }] }],
  };
  await client.chat.completions.create(withImage);
  t.same(delta(before), { a: 0, b: 1, c: 0 }, 'with an image: b/vis first');
  const sent = fakes.b.received.at(-1)!.body as { messages: { content: unknown }[] };
  t.match(JSON.stringify(sent.messages), /image_url/, 'the image reached the capable model');

  // Only when the capable member fails does the other get it, without the image it cannot take.
  before = counts();
  fakes.b.next({ kind: 'error', status: 500, body: { error: { message: 'down' } } });
  await client.chat.completions.create(withImage);
  t.same(delta(before), { a: 1, b: 1, c: 0 });
  t.notMatch(JSON.stringify(fakes.a.received.at(-1)!.body), /image_url/, 'a/text (no vision) got the text only');
});

t.test('a combo member may carry a thinking suffix', async (t) => {
  resetCooldowns();
  gw.holder.replace({
    ...gw.holder.current,
    providers: { ...gw.holder.current.providers, a: { ...gw.holder.current.providers.a!, models: { ...gw.holder.current.providers.a!.models, r: { kind: 'llm', capabilities: ['reasoning'], thinking: 'openai' } } } },
    combos: { ...gw.holder.current.combos, think: { strategy: 'fallback', models: ['a/r(high)', 'b/m'] } },
  });
  await client.chat.completions.create(ask('think'));
  const sent = fakes.a.received.at(-1)!.body;
  t.equal(sent.model, 'r', 'the suffix is removed from the model sent upstream');
  t.equal(sent.reasoning_effort, 'high', 'and becomes the provider family\'s own parameter');
});

t.teardown(() => Promise.all(Object.values(fakes).map((f: FakeOpenAI) => f.close())));
