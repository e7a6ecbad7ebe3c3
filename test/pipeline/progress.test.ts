// How far a request in flight has come (src/pipeline/outcome.ts progressOf, the Ledger's begin sinks): while a slow
// stream runs, its progress grows from 0 towards the request's max output tokens on every path (the OpenAI Chat fast
// path, the translated path, the same-format passthrough), and once the upstream reports usage the count is its.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import type { Progress } from '../../src/ledger/ledger.js';

const oa = await startFakeOpenAI(t);
const an = await startFakeAnthropic(t);
const gw = await startApp(t, { providers: { oa: fakeProvider(oa.baseUrl), an: fakeAnthropicProvider(an.url) } });

/** Every begin sink call: the request id and its progress function. */
const begun = new Map<string, () => Progress>();
gw.app.tollgate.ledger.subscribeBegin((id, _snapshot, progress) => begun.set(id, progress));

/** Read a stream to its end, sampling the request's progress after each chunk. */
async function sampled(res: Response): Promise<Progress[]> {
  const id = res.headers.get('x-request-id')!;
  const progress = begun.get(id)!;
  const seen: Progress[] = [progress()];
  for await (const _chunk of res.body!) seen.push(progress());
  seen.push(progress());
  return seen;
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

t.test('OpenAI Chat fast path: streamed output counted as it comes, then the reported count', async (t) => {
  oa.next({ kind: 'ok', words: ['aaaaaaaa', 'bbbbbbbb', 'cccccccc', 'dddddddd'], chunkDelayMs: 100, usage: { prompt_tokens: 5, completion_tokens: 17 } });
  const res = await post('/v1/chat/completions', { model: 'oa/gpt-4o', max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
  const seen = await sampled(res);
  // The answer's headers can arrive with its first chunk: the first sample is partial, not necessarily 0.
  t.equal(seen[0]!.estimatedTotal, 100, 'the total is max_tokens');
  t.ok(seen[0]!.streamedTokens < 8, 'partial when the stream opens');
  t.ok(seen.some((p) => p.streamedTokens > 0 && p.streamedTokens < 17), 'a partial count while streaming (8 characters a chunk every 100 ms, ~2 tokens)');
  t.same(seen.at(-1), { streamedTokens: 17, estimatedTotal: 100, estimatedInput: null }, 'the upstream reported 17 output tokens');
});

t.test('translated path (Anthropic client to an OpenAI provider): the same progress', async (t) => {
  oa.next({ kind: 'ok', words: ['aaaaaaaa', 'bbbbbbbb', 'cccccccc', 'dddddddd'], chunkDelayMs: 100, omitUsage: true });
  const res = await post('/v1/messages', { model: 'oa/gpt-4o', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' });
  t.equal(res.status, 200);
  const seen = await sampled(res);
  t.equal(seen[0]!.estimatedTotal, 64, 'the total is max_tokens');
  t.ok(seen[0]!.streamedTokens < 8, 'partial when the stream opens');
  const counts = seen.map((p) => p.streamedTokens);
  t.same([...counts].sort((a, b) => a - b), counts, 'never goes back');
  t.equal(seen.at(-1)!.streamedTokens, 8, 'no usage reported: 32 characters at about 4 a token');
});

t.test('same-format passthrough (Anthropic to Anthropic): the same progress', async (t) => {
  an.next({ kind: 'ok', text: ['aaaaaaaa', 'bbbbbbbb', 'cccccccc', 'dddddddd'], eventDelayMs: 100 });
  const res = await post('/v1/messages', { model: 'an/claude-sonnet-4-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' });
  t.equal(res.status, 200);
  const seen = await sampled(res);
  t.equal(seen[0]!.estimatedTotal, 50, 'the total is max_tokens');
  t.ok(seen[0]!.streamedTokens < 8, 'partial when the stream opens');
  t.ok(seen.some((p) => p.streamedTokens > 0 && p.streamedTokens < 9), 'a partial count while streaming');
  t.equal(seen.at(-1)!.streamedTokens, 9, "the fake's reported output_tokens");
});
