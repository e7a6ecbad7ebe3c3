// The `openai` adapter: usage normalisation into the five non-overlapping buckets (DESIGN.md decision 4) and what
// each stream chunk carries, on fixtures shaped exactly like OpenAI's responses.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import { openaiAdapter } from '../../src/wire/openai/index.js';
import { openaiUsage } from '../../src/wire/openai/usage.js';
import { SseParser } from '../../src/wire/sse.js';
import { totalTokens } from '../../src/ledger/types.js';
import { wireJson } from '../helpers/wire.js';

const fixture = (name: string) => new URL(`../fixtures/openai/${name}`, import.meta.url);
const json = (name: string) => JSON.parse(readFileSync(fixture(name), 'utf8')) as Record<string, unknown> & { usage: Record<string, number> };

/** The JSON payloads of an SSE fixture, '[DONE]' kept as a string. */
function chunks(name: string): unknown[] {
  const p = new SseParser();
  const frames = [...p.push(readFileSync(fixture(name))), ...p.end()];
  return frames.map((f) => (f.data === '[DONE]' ? '[DONE]' : JSON.parse(f.data)));
}

t.test('openaiUsage: cached taken out of prompt, reasoning out of completion', async (t) => {
  const body = json('chat-completion-reasoning-cached.json');
  const u = openaiUsage(body.usage);
  t.same(u, { input: 86, cached: 1920, cacheWrite: null, output: 108, reasoning: 192 });
  t.equal(totalTokens(u!), body.usage.total_tokens, 'the buckets add up to OpenAI total_tokens: nothing counted twice');
  t.same(openaiAdapter.usageFromResponse(body), u, 'usageFromResponse reads body.usage');
});

t.test('openaiUsage: reported zeros stay zeros', async (t) => {
  const body = json('chat-completion-zero-details.json');
  t.same(openaiUsage(body.usage), { input: 19, cached: 0, cacheWrite: null, output: 2, reasoning: 0 });
});

t.test('openaiUsage: missing details are null buckets, not 0', async (t) => {
  const body = json('chat-completion-no-details.json');
  const u = openaiUsage(body.usage);
  t.same(u, { input: 42, cached: null, cacheWrite: null, output: 10, reasoning: null });
  t.equal(totalTokens(u!), 52);
  t.same(
    openaiUsage({ prompt_tokens: 42, completion_tokens: 10, prompt_tokens_details: null, completion_tokens_details: null }),
    { input: 42, cached: null, cacheWrite: null, output: 10, reasoning: null },
    'null details objects',
  );
  t.same(
    openaiUsage({ prompt_tokens: 42, completion_tokens: 10, prompt_tokens_details: { audio_tokens: 0 }, completion_tokens_details: {} }),
    { input: 42, cached: null, cacheWrite: null, output: 10, reasoning: null },
    'details without the fields',
  );
  t.same(openaiUsage({ completion_tokens: 10 }), { input: null, cached: null, cacheWrite: null, output: 10, reasoning: null }, 'only completion reported');
  t.same(openaiUsage({ prompt_tokens: 42 }), { input: 42, cached: null, cacheWrite: null, output: null, reasoning: null }, 'only prompt reported (embeddings-like)');
  t.same(openaiUsage({ prompt_tokens: 0, completion_tokens: 0 }), { input: 0, cached: null, cacheWrite: null, output: 0, reasoning: null }, 'zero is reported, not null');
});

t.test('openaiUsage: garbage is null', async (t) => {
  for (const raw of [undefined, null, 0, 42, 'usage', true, [], {}, { total_tokens: 52 }, { prompt_tokens: 'ten', completion_tokens: '5' }, { prompt_tokens: -1, completion_tokens: -5 }, { prompt_tokens: NaN, completion_tokens: Infinity }, { prompt_tokens: null, completion_tokens: null }]) {
    t.equal(openaiUsage(raw), null, JSON.stringify(raw) ?? String(raw));
  }
  t.same(
    openaiUsage({ prompt_tokens: 10, completion_tokens: 'x', prompt_tokens_details: { cached_tokens: 'lots' }, completion_tokens_details: 'none' }),
    { input: 10, cached: null, cacheWrite: null, output: null, reasoning: null },
    'garbage fields become null, the good ones stay',
  );
  t.same(openaiUsage({ prompt_tokens: 10.4, completion_tokens: 4.6 }), { input: 10, cached: null, cacheWrite: null, output: 5, reasoning: null }, 'fractions rounded');
  t.same(
    openaiUsage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 12 }, completion_tokens_details: { reasoning_tokens: 5 } }),
    { input: 0, cached: 10, cacheWrite: null, output: 0, reasoning: 3 },
    'inconsistent vendor numbers never make a bucket negative, and a part is never more than its whole',
  );
  t.equal(openaiAdapter.usageFromResponse(null), null);
  t.equal(openaiAdapter.usageFromResponse({ choices: [] }), null, 'a response without usage');
});

t.test('inspectChunk over a streamed answer with include_usage', async (t) => {
  const cs = chunks('stream-include-usage.sse');
  t.equal(cs.at(-1), '[DONE]');
  const infos = cs.slice(0, -1).map((c) => openaiAdapter.inspectChunk(c));
  t.same(infos.map((i) => i.deltas), [0, 1, 1, 1, 1, 1, 1, 1, 0, 0], 'role chunk with content "" is not a delta; each word is; finish chunk is not');
  t.same(infos.map((i) => i.usageOnly), [false, false, false, false, false, false, false, false, false, true], 'only the choices: [] chunk is usage-only');
  t.same(infos.slice(0, -1).map((i) => i.usage), Array(9).fill(null), 'usage: null on content chunks is no usage');
  t.same(infos.at(-1)!.usage, { input: 30, cached: 1280, cacheWrite: null, output: 7, reasoning: 0 });
  t.equal(infos.at(-1)!.deltas, 0);
});

/** The fields of a chunk's info that say what it is (the answer text is checked on its own). */
const core = (i: { usage: unknown; deltas: number; usageOnly: boolean }) => ({ usage: i.usage, deltas: i.deltas, usageOnly: i.usageOnly });

t.test('inspectChunk over a stream without usage', async (t) => {
  const raw = chunks('stream-no-usage.sse').slice(0, -1);
  const infos = raw.map((c) => openaiAdapter.inspectChunk(c));
  const text = raw.map((c) => (c as { choices: { delta?: { content?: string | null } }[] }).choices[0]?.delta?.content ?? '').join('');
  t.ok(text.length > 0);
  t.equal(infos.map((i) => i.output).join(''), text, 'the answer text, as the chunks carry it (for an estimate)');
  t.same(infos.map(core), [
    { usage: null, deltas: 0, usageOnly: false },
    { usage: null, deltas: 1, usageOnly: false },
    { usage: null, deltas: 1, usageOnly: false },
    { usage: null, deltas: 0, usageOnly: false },
  ]);
});

t.test('inspectChunk counts tool_calls deltas', async (t) => {
  const infos = chunks('stream-tool-calls.sse').slice(0, -1).map((c) => openaiAdapter.inspectChunk(c));
  t.same(infos.map((i) => i.deltas), [1, 1, 1, 1, 1, 1, 1, 1, 0, 0], 'the call header (arguments "") and each arguments piece count');
  t.same(infos.at(-1)!.usage, { input: 82, cached: 0, cacheWrite: null, output: 17, reasoning: 0 });
  t.ok(infos.at(-1)!.usageOnly);
});

t.test('inspectChunk: deltas, edge cases and other vendors', async (t) => {
  const base = { id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1747307480, model: 'gpt-4o' };
  const delta = (d: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: null }], ...extra });
  t.equal(openaiAdapter.inspectChunk(delta({ content: '' })).deltas, 0, 'empty content is not a delta');
  t.equal(openaiAdapter.inspectChunk(delta({ content: null })).deltas, 0, 'null content is not a delta');
  t.equal(openaiAdapter.inspectChunk(delta({ content: ' ' })).deltas, 1, 'whitespace is a delta');
  t.equal(openaiAdapter.inspectChunk(delta({ reasoning_content: 'Let me think' })).deltas, 1, 'DeepSeek/Qwen reasoning_content');
  t.equal(openaiAdapter.inspectChunk(delta({ reasoning: 'Hmm' })).deltas, 1, 'OpenRouter reasoning');
  t.equal(openaiAdapter.inspectChunk(delta({ reasoning_content: '', content: '' })).deltas, 0);
  t.equal(openaiAdapter.inspectChunk(delta({ tool_calls: [] })).deltas, 0, 'an empty tool_calls array is not a delta');
  t.equal(openaiAdapter.inspectChunk(delta({ refusal: null, role: 'assistant' })).deltas, 0);
  t.equal(openaiAdapter.inspectChunk(delta({ content: 'a', reasoning_content: 'b' })).deltas, 1, 'one delta per choice, not per field');
  t.equal(
    openaiAdapter.inspectChunk({ ...base, choices: [{ index: 0, delta: { content: 'a' } }, { index: 1, delta: { content: 'b' } }, { index: 2, delta: { content: '' } }] }).deltas,
    2,
    'n > 1: one per choice with content',
  );
  t.equal(openaiAdapter.inspectChunk({ ...base, choices: [{ index: 0, delta: null, finish_reason: 'stop' }] }).deltas, 0, 'a null delta');

  const azureFirst = { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] };
  t.same(core(openaiAdapter.inspectChunk(azureFirst)), { usage: null, deltas: 0, usageOnly: false }, "Azure's empty-choices first chunk is not usage-only");

  const usage = { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 };
  const withBoth = { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage };
  t.same(core(openaiAdapter.inspectChunk(withBoth)), { usage: { input: 12, cached: null, cacheWrite: null, output: 4, reasoning: null }, deltas: 0, usageOnly: false }, 'usage on the finish chunk (vLLM, Groq): not usage-only, it must be forwarded');
  t.same(openaiAdapter.inspectChunk({ ...base, usage }).usageOnly, true, 'no choices key at all + usage is usage-only');
  t.same(core(openaiAdapter.inspectChunk({ ...base, choices: [], usage: { total_tokens: 5 } })), { usage: null, deltas: 0, usageOnly: false }, 'unusable usage is no usage');

  for (const garbage of [null, undefined, 'data', 42, [], {}, { choices: 'x' }, { choices: [{}] }, { choices: [{ delta: 'text' }] }]) {
    t.same(core(openaiAdapter.inspectChunk(garbage)), { usage: null, deltas: 0, usageOnly: false }, `garbage ${JSON.stringify(garbage)}`);
  }
});

t.test('chatRequest: model id, usage request and auth', async (t) => {
  const cfg = parseConfig(
    { providers: { openai: { group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1/', auth: { type: 'api_key', key: 'sk-test' }, headers: { 'OpenAI-Organization': 'org-1' } } } },
    {},
  );
  const p = cfg.providers.openai!;
  const body = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_obfuscation: false } };
  const req = openaiAdapter.chatRequest(p, 'gpt-4o', body, true);
  t.equal(req.path, '/v1/chat/completions');
  const sent = wireJson(req.body) as Record<string, unknown>;
  t.equal(sent.model, 'gpt-4o', 'the provider prefix is gone');
  t.same(sent.stream_options, { include_obfuscation: false, include_usage: true }, 'usage asked for, other stream options kept');
  t.same(sent.messages, body.messages);
  t.equal(req.headers.authorization, 'Bearer sk-test');
  t.equal(req.headers.accept, 'text/event-stream');
  t.equal(req.headers['OpenAI-Organization'], 'org-1');
  t.equal(body.model, 'openai/gpt-4o', "the client's body is not modified");

  const unary = wireJson(openaiAdapter.chatRequest(p, 'gpt-4o', { model: 'x', messages: [] }, true).body) as Record<string, unknown>;
  t.notOk('stream_options' in unary, 'no stream_options on a non-streamed request');
  const noAsk = wireJson(openaiAdapter.chatRequest(p, 'gpt-4o', { model: 'x', messages: [], stream: true }, false).body) as Record<string, unknown>;
  t.notOk('stream_options' in noAsk, 'not asked: nothing added');

  const custom = parseConfig({ providers: { az: { group: 'paid', format: 'openai', base_url: 'https://x.example.com/openai', auth: { type: 'api_key', key: 'k', header: 'api-key' } } } }, {}).providers.az!;
  const r2 = openaiAdapter.chatRequest(custom, 'm', { model: 'az/m', messages: [] }, false);
  t.equal(r2.path, '/openai/chat/completions');
  t.equal(r2.headers['api-key'], 'k', 'a custom auth header carries the bare key');
  t.notOk('authorization' in r2.headers);
});

t.test('inspectChunk tolerates a null entry in choices, as finishReasons in chat.ts does', async (t) => {
  // Upstream JSON is untrusted. A throw here ends the client's stream with an "upstream connection failed" error
  // and records the request as a failure, for one odd chunk from an otherwise working upstream.
  let info: ReturnType<typeof openaiAdapter.inspectChunk> | undefined;
  t.doesNotThrow(() => {
    info = openaiAdapter.inspectChunk({ id: 'chatcmpl-x', object: 'chat.completion.chunk', choices: [null, { index: 1, delta: { content: 'ok' } }] });
  });
  t.same(info && core(info), { usage: null, deltas: 1, usageOnly: false }, 'the good choice is still counted');
  t.equal(info?.output, 'ok', 'and its text');
});
