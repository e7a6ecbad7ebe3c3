// Conformance, what reaches the provider: the path, the provider's key in its own header, the config headers; the
// target fitted to the model (prefix removed, max_tokens clamped to max_output_tokens, a `(high)` suffix as the
// family's thinking parameters, tools removed for a model without the `tools` capability); a stream that asks for
// usage where the format needs asking (Chat's stream_options.include_usage) and records reported usage everywhere.
// Every request is an OpenAI Chat client's, so each provider is reached through its own path (the fast path for
// openai and mock, the canonical model for the others).

import t from 'tap';
import { chat, send } from './clients.js';
import { CAP, CONFIG_HEADER, TEXT } from './providers.js';
import { answered, bucketsOf, eachProvider, receivedAfter, rowOf, startSuite } from './suite.js';

const suite = await startSuite(t);
const { gw } = suite;

eachProvider(t, suite, 'request-shape', async (t, p, up) => {
  for (const stream of [false, true]) {
    const before = up.received.length;
    up.script({ kind: 'text' });
    const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream });
    answered(t, r);
    const got = await receivedAfter(up, before);
    t.equal(got.path, p.wirePath(p.models.main, stream), `stream=${stream}: the format's path`);
    t.equal(p.keyOf(got.headers), p.key, `stream=${stream}: the provider key in the format's header`);
    t.equal(got.headers[CONFIG_HEADER], p.id, `stream=${stream}: the provider's config headers`);
    t.notOk(JSON.stringify(got.headers).includes('unused-client-key'), 'the client key never goes upstream');
  }
});

eachProvider(t, suite, 'prefix', async (t, p, up) => {
  const before = up.received.length;
  up.script({ kind: 'text' });
  await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: false });
  const got = await receivedAfter(up, before);
  const model = got.body.model ?? got.path;
  t.ok(String(model).includes(p.models.main), `the model id reaches the provider (${String(model)})`);
  t.notOk(String(model).includes(`${p.id}/`), 'without the provider prefix');
});

eachProvider(t, suite, 'clamp', async (t, p, up) => {
  up.script({ kind: 'text' });
  const before = up.received.length;
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.capped}`, stream: false, maxTokens: 5000 });
  answered(t, r);
  if (p.clampShows === 'wire') {
    t.equal(p.maxTokensOf((await receivedAfter(up, before)).body), CAP, `max_tokens 5000 clamped to max_output_tokens ${CAP}`);
  } else {
    const answer = chat.parse(r.text, false);
    t.equal(answer.finish, 'length', 'the answer was cut at the clamp');
    t.equal(Number((await rowOf(gw, r.requestId)).output_tokens), 3, 'output tokens = the clamp (3)');
  }
  // Below the clamp the client's value goes as written.
  if (p.clampShows === 'wire') {
    up.script({ kind: 'text' });
    const b2 = up.received.length;
    await send(gw.url, chat, { model: `${p.id}/${p.models.capped}`, stream: false, maxTokens: 20 });
    t.equal(p.maxTokensOf((await receivedAfter(up, b2)).body), 20, 'a smaller max_tokens is kept');
  }
});

eachProvider(t, suite, 'thinking', async (t, p, up) => {
  up.script({ kind: 'text' });
  const before = up.received.length;
  // A max_tokens with room for the level's whole budget (anthropic-budget caps it below max_tokens, docs/thinking.md).
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}(high)`, stream: false, maxTokens: 30000 });
  answered(t, r);
  const got = await receivedAfter(up, before);
  t.notOk(JSON.stringify(got.body).includes('(high)') || got.path.includes('(high)'), 'the suffix itself never goes upstream');
  t.same(p.thinkingOf(got.body), p.thinkingHigh, 'the level in the family\'s own parameter');
  const max = p.maxTokensOf(got.body);
  if (typeof max === 'number' && typeof (p.thinkingHigh as { budget_tokens?: number })?.budget_tokens === 'number') {
    t.ok((p.thinkingHigh as { budget_tokens: number }).budget_tokens < max, `the budget is below max_tokens (${max})`);
  }
  // A model without the reasoning capability gets no thinking parameters at all.
  up.script({ kind: 'text' });
  const b2 = up.received.length;
  await send(gw.url, chat, { model: `${p.id}/${p.models.plain}(high)`, stream: false });
  t.equal(p.thinkingOf((await receivedAfter(up, b2)).body), undefined, 'no thinking for a model without reasoning');
});

eachProvider(t, suite, 'capabilities', async (t, p, up) => {
  up.script({ kind: 'text' });
  const before = up.received.length;
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.plain}`, stream: false, tools: true });
  answered(t, r);
  const got = await receivedAfter(up, before);
  for (const f of p.toolFields) t.notOk(f in got.body, `${f} removed for a model without the tools capability`);
  t.equal(chat.parse(r.text, false).text, TEXT, 'the model answered in text');
  // The same request to the model with tools keeps them.
  up.script({ kind: 'text' });
  const b2 = up.received.length;
  await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: false, tools: true });
  t.ok('tools' in (await receivedAfter(up, b2)).body, 'kept for a model with tools');
});

eachProvider(t, suite, 'stream-usage', async (t, p, up) => {
  up.script({ kind: 'text' });
  const before = up.received.length;
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: true });
  t.equal(chat.parse(r.text, true).end, 'done');
  if (p.format === 'openai') t.same((await receivedAfter(up, before)).body.stream_options, { include_usage: true }, 'Chat asks for usage');
  else if (p.format !== 'mock') t.notOk('stream_options' in (await receivedAfter(up, before)).body, 'nothing to ask: the format always reports');
  const row = await rowOf(gw, r.requestId);
  t.equal(row.usage_source, 'reported', 'the streamed usage is the upstream\'s');
  t.same(bucketsOf(row), p.usage, 'all five buckets as reported');
});
