// Gemini's thought signatures in OpenAI Chat form (src/wire/openai/google.ts). Google's OpenAI-compatible endpoint
// puts Gemini 3's signature on each tool call as `extra_content.google.thought_signature` and refuses (400) a next
// request whose current-turn calls come back without it. The Chat codec reads it from answers (whole and streamed)
// and from a Chat client's history, renders it to a Chat client as Google does, and writes it (or Google's
// placeholder for a call without one) into a request only for a provider whose base_url is Google's.

import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { Target } from '../../src/wire/codec.js';
import type { CanonicalEvent, CanonicalRequest, CanonicalResponse } from '../../src/wire/canonical.js';
import { createOpenAIChatRenderer, openaiCodec, OpenAIChatStreamParser } from '../../src/wire/openai/codec.js';
import { isGoogleOpenAIEndpoint } from '../../src/wire/openai/google.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { GeminiStreamRenderer } from '../../src/wire/gemini/stream.js';
import type { SseFrame } from '../../src/wire/sse.js';

// Parsed wire JSON, read field by field in assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const SIG = 'EjQKMgG+Pvb7fake/gemini3/chat/signature==';
const PLACEHOLDER = 'skip_thought_signature_validator';
const extra = (sig: string) => ({ google: { thought_signature: sig } });

const row = (base_url: string) => ({ group: 'paid', format: 'openai', base_url, auth: { type: 'api_key', key: 'k' }, models: { 'gemini-3-pro-preview': { capabilities: ['tools', 'reasoning'] } } });
const cfg = parseConfig(
  {
    providers: {
      google: row('https://generativelanguage.googleapis.com/v1beta/openai/'),
      vertex: row('https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/endpoints/openapi'),
      openai: row('https://api.openai.com/v1'),
      gemini: { group: 'paid', format: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', auth: { type: 'api_key', key: 'k' }, models: { 'gemini-3-pro-preview': { capabilities: ['tools', 'reasoning'], thinking: 'gemini-level' } } },
    },
  },
  {},
);
const target = (providerId: string): Target => {
  const provider = cfg.providers[providerId]!;
  return { providerId, provider, modelId: 'gemini-3-pro-preview', model: provider.models['gemini-3-pro-preview'] ?? null };
};
const frame = (data: unknown): SseFrame => ({ event: null, id: null, data: typeof data === 'string' ? data : JSON.stringify(data) });
const chunk = (delta: Json, finish: string | null = null) => ({ id: 'c1', object: 'chat.completion.chunk', model: 'g', choices: [{ index: 0, delta, finish_reason: finish }] });
function parse(chunks: unknown[]): CanonicalEvent[] {
  const p = new OpenAIChatStreamParser();
  return [...chunks.flatMap((c) => p.frame(frame(c))), ...p.frame(frame('[DONE]')), ...p.end()];
}
const renderStream = (events: CanonicalEvent[]): Json[] => {
  const r = createOpenAIChatRenderer('m', { includeUsage: false });
  const text = events.map((e) => r.event(e)).join('') + r.end();
  return text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as Json);
};

t.test("the host rule: Google's OpenAI-compatible endpoints only", async (t) => {
  for (const url of [
    'https://generativelanguage.googleapis.com/v1beta/openai/', 'https://GenerativeLanguage.googleapis.com/v1beta/openai',
    'https://aiplatform.googleapis.com/v1/projects/p/locations/global/endpoints/openapi',
    'https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/endpoints/openapi',
    'http://generativelanguage.googleapis.com:8080/v1beta/openai',
  ]) t.ok(isGoogleOpenAIEndpoint(url), url);
  for (const url of [
    'https://api.openai.com/v1', 'https://openrouter.ai/api/v1', 'http://127.0.0.1:11434/v1', 'https://googleapis.com/v1',
    'https://generativelanguage.googleapis.com.example.com/v1', 'https://example.com/generativelanguage.googleapis.com',
    'https://aiplatform.googleapis.com.evil.example/v1', 'https://notaiplatform.example.com/v1', '', 'not a url',
  ]) t.notOk(isGoogleOpenAIEndpoint(url), url || "''");
  t.notOk(isGoogleOpenAIEndpoint(undefined), 'no base_url (the mock)');
});

t.test('a whole Chat answer: extra_content.google.thought_signature becomes the call\'s Gemini signature', async (t) => {
  const res = openaiCodec.parseResponse({
    id: 'c1', object: 'chat.completion', model: 'gemini-3-pro-preview',
    choices: [{
      index: 0, finish_reason: 'tool_calls', message: {
        role: 'assistant', content: null, tool_calls: [
          { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: extra(SIG) },
          { id: 'b', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
          { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: extra('') },
          { id: 'd', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: { google: { thought_signature: 7 } } },
        ],
      },
    }],
  });
  t.same(res.content, [
    { type: 'tool_call', id: 'a', name: 'f', arguments: '{}', signature: SIG, origin: 'gemini' },
    { type: 'tool_call', id: 'b', name: 'f', arguments: '{"x":1}' },
    { type: 'tool_call', id: 'c', name: 'f', arguments: '{}' },
    { type: 'tool_call', id: 'd', name: 'f', arguments: '{}' },
  ], 'only a non-empty string is a signature');
});

t.test('a Chat stream: the signature on the call\'s first delta goes on tool_call_start', async (t) => {
  // As Google's endpoint streams: each call whole in one delta, without `index`.
  const events = parse([
    chunk({ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":1}' }, extra_content: extra(SIG) }] }),
    chunk({ tool_calls: [{ id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
  ]);
  const starts = events.filter((e) => e.type === 'tool_call_start');
  t.same(starts, [
    { type: 'tool_call_start', index: 0, id: 'a', name: 'f', signature: SIG, origin: 'gemini' },
    { type: 'tool_call_start', index: 1, id: 'b', name: 'g' },
  ]);
});

t.test('a Chat stream: a signature on a later fragment of the call still reaches the call', async (t) => {
  // Before the name (the call is not started yet): on the start. After the start: on the delta it came with.
  const early = parse([
    chunk({ tool_calls: [{ index: 0, extra_content: extra(SIG), function: { arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
  ]);
  t.match(early.find((e) => e.type === 'tool_call_start'), { signature: SIG, origin: 'gemini' }, 'before the start: on tool_call_start');
  const late = parse([
    chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x"' } }] }),
    chunk({ tool_calls: [{ index: 0, extra_content: extra(SIG) }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' }, extra_content: extra('another') }] }),
    chunk({}, 'tool_calls'),
  ]);
  t.notMatch(late.find((e) => e.type === 'tool_call_start'), { signature: String }, 'the start had none');
  t.same(late.filter((e) => e.type === 'tool_call_delta'), [
    { type: 'tool_call_delta', index: 0, arguments: '{"x"' },
    { type: 'tool_call_delta', index: 0, arguments: '', signature: SIG, origin: 'gemini' },
    { type: 'tool_call_delta', index: 0, arguments: ':1}' },
  ], 'on a delta of its own (a fragment with no arguments), once: the first signature of a call is its signature');
  // A Gemini client gets it on the functionCall part, wherever it came.
  const r = new GeminiStreamRenderer('m');
  const text = late.map((e) => r.event(e)).join('') + r.end();
  t.match(text, `"thoughtSignature":"${SIG}"`, 'a Gemini client gets the late signature on the call');
});

const answer = (origin: 'gemini' | 'anthropic'): CanonicalResponse => ({
  id: 'r1', model: 'm', stopReason: 'tool_calls', usage: null,
  content: [{ type: 'tool_call', id: 'a', name: 'f', arguments: '{}', signature: SIG, origin }, { type: 'tool_call', id: 'b', name: 'f', arguments: '{}' }],
});

t.test('rendered to a Chat client: a Gemini signature as extra_content, as Google sends it', async (t) => {
  const calls = (openaiCodec.renderResponse(answer('gemini'), 'm') as Json).choices[0].message.tool_calls as Json[];
  t.same(calls[0]!.extra_content, extra(SIG), 'whole: on the call');
  t.notOk('extra_content' in calls[1]!, 'a call without one has none');
  const other = (openaiCodec.renderResponse(answer('anthropic'), 'm') as Json).choices[0].message.tool_calls as Json[];
  t.notOk('extra_content' in other[0]!, "another family's signature is not sent");

  const events = (origin: 'gemini' | 'anthropic'): CanonicalEvent[] => [
    { type: 'start', id: 'r1', model: 'm' },
    { type: 'tool_call_start', index: 0, id: 'a', name: 'f', signature: SIG, origin },
    { type: 'tool_call_delta', index: 0, arguments: '{}' },
    { type: 'block_stop', index: 0 },
    { type: 'tool_call_start', index: 1, id: 'b', name: 'f' },
    { type: 'tool_call_delta', index: 1, arguments: '{}', signature: 'LATE', origin },
    { type: 'block_stop', index: 1 },
    { type: 'finish', stopReason: 'tool_calls' },
  ];
  const deltas = renderStream(events('gemini')).flatMap((c) => (c.choices[0]?.delta?.tool_calls ?? []) as Json[]);
  t.same(deltas[0], { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '' }, extra_content: extra(SIG) }, 'streamed: on the call\'s first delta');
  t.notOk('extra_content' in deltas[1]!, 'not repeated on its argument delta');
  t.same(deltas.at(-1), { index: 1, function: { arguments: '{}' }, extra_content: extra('LATE') }, 'a late one on the delta it came with');
  t.notMatch(JSON.stringify(renderStream(events('anthropic'))), /extra_content/, "another family's signature is not streamed");
});

t.test("a Chat client's history: the signature it kept goes back to a Gemini provider as thoughtSignature", async (t) => {
  const req = openaiCodec.parseRequest({
    model: 'gemini-3-pro-preview',
    messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: extra(SIG) }] },
      { role: 'tool', tool_call_id: 'a', content: 'sunny' },
    ],
  });
  t.match(req.messages[1]!.content[0], { type: 'tool_call', signature: SIG, origin: 'gemini' }, 'read into the call');
  const built = geminiCodec.buildRequest(req, target('gemini')).body as Json;
  t.same(built.contents[1].parts[0].thoughtSignature, SIG, 'sent to Gemini on the functionCall part');
  const placeholder = openaiCodec.parseRequest({
    model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: extra(PLACEHOLDER) }] }],
  });
  t.notMatch(placeholder.messages[0]!.content[0], { signature: String }, 'the placeholder is no signature');
});

// A history as an Anthropic client (Claude Code) or a Gemini client sends it: two assistant turns, the first with a
// Gemini signature on its second call only, the second with calls of no signature (another family's).
const history = (origin: 'gemini' | 'anthropic'): CanonicalRequest => ({
  model: 'gemini-3-pro-preview', system: [], stream: false,
  tools: [{ name: 'f', parameters: { type: 'object' } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'go' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'calling' }, { type: 'tool_call', id: 'a', name: 'f', arguments: '{}' }, { type: 'tool_call', id: 'b', name: 'f', arguments: '{}', signature: SIG, origin }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'a', content: [{ type: 'text', text: '1' }] }, { type: 'tool_result', callId: 'b', content: [{ type: 'text', text: '2' }] }] },
    { role: 'assistant', content: [{ type: 'tool_call', id: 'c', name: 'f', arguments: '{}' }, { type: 'tool_call', id: 'd', name: 'f', arguments: '{}' }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'c', content: [{ type: 'text', text: '3' }] }, { type: 'tool_result', callId: 'd', content: [{ type: 'text', text: '4' }] }] },
  ],
});
const sentCalls = (t: Test, providerId: string, origin: 'gemini' | 'anthropic' = 'gemini'): Json[][] => {
  const built = openaiCodec.buildRequest(history(origin), target(providerId));
  t.same(built.dropped, [], 'nothing listed as dropped');
  return ((built.body as Json).messages as Json[]).filter((m) => m.role === 'assistant').map((m) => m.tool_calls as Json[]);
};

t.test("to Google's OpenAI-compatible endpoint: signatures as extra_content, the placeholder on a turn's first unsigned call", async (t) => {
  for (const provider of ['google', 'vertex']) {
    const [first, second] = sentCalls(t, provider);
    t.same(first!.map((c) => c.extra_content), [extra(PLACEHOLDER), extra(SIG)], `${provider}: the turn's own signature kept, its unsigned first call gets the placeholder`);
    t.same(second!.map((c) => c.extra_content), [extra(PLACEHOLDER), undefined], `${provider}: a turn without signatures: the placeholder on its first call only`);
    const [foreign] = sentCalls(t, provider, 'anthropic');
    t.same(foreign!.map((c) => c.extra_content), [extra(PLACEHOLDER), undefined], `${provider}: another family's signature is not sent`);
  }
});

t.test('to any other OpenAI-compatible server: no extra_content at all', async (t) => {
  const calls = sentCalls(t, 'openai').flat();
  t.equal(calls.length, 4);
  for (const c of calls) t.same(Object.keys(c).sort(), ['function', 'id', 'type'], `call ${String(c.id)}: id, type and function only`);
});
