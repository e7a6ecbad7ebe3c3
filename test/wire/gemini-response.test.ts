// The `gemini` codec, whole answers: GenerateContentResponse <-> CanonicalResponse, and usageMetadata <-> the five
// buckets of DESIGN.md decision 4, on a fixture shaped like a real Gemini 2.5 answer.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { TollgateError } from '../../src/core/errors.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { geminiUsage, renderGeminiUsage } from '../../src/wire/gemini/usage.js';
import type { CanonicalResponse, StopReason } from '../../src/wire/canonical.js';
import { totalTokens } from '../../src/ledger/types.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/gemini/${name}`, import.meta.url), 'utf8')) as Record<string, unknown> & { usageMetadata: Record<string, number> };

const THOUGHT =
  "**Checking the forecast**\n\nThe user wants the current weather in Paris. I have a `get_weather` tool, so I'll call it with the city and Celsius rather than guess.\n";

/** The thoughtSignature on the fixture's functionCall part. */
const FC_SIG = "CtQCAdHtim9uPB3Yq0d3pbsO0rVt6mJc8dTSgl0n4C5bHq1SxZ1WvF2cJ9E8Kp3Lr7yQ2u5xH0aVfN6tDk4mB1sW8zR3gYcP0eLqXjU7nT2vA9oKdIh5MwG6bCfZ1rS8yE4pJ3xQ0uN7kLmV2tH9aD6cR1gW5oB8sF3jY0zK7nP4eT2qX6vU1iM9hL5dA8wC3bG0fE7rS2yN4kJ6pV1tZ9xQ3uO5mH8gD0aB2cL7sW4eR1jK6nF9vY3tI5oP8qU2xM0hG7dA4zC1bE6rS9wN3kJ5pV8tL2yQ0uO7mH4gD1aB6cZ3sW9eR5jK2nF8vY0tI7oP4qU1xM6hG3dA9zC5bE2rS8wN0kJ7pV4tL1yQ6uO3mH9gD5aB2cZ8sW0eR7jK4nF1vY6tI3oP9qU5xM2hG8dA0zC7bE4rS1wN6kJ3pV9tL5yQ2uO8mH0gD7aB4cZ1sW6eR3jK9nF5vY2tI8oP0qU7xM4hG1dA6zC3bE9rS5wN2kJ8pV0tL7yQ4uO1mH6gD3aB9cZ5s";

t.test('parseResponse: thought summary, text and functionCall; cached and thoughts usage', async (t) => {
  const body = fixture('generate-thought-text-call.json');
  const res = geminiCodec.parseResponse(body);
  t.strictSame(res, {
    id: 'mZ3FaJ7XLMGd1dkP8qKxgAo',
    model: 'gemini-2.5-flash',
    content: [
      { type: 'reasoning', text: THOUGHT },
      { type: 'text', text: "I'll look up the current weather in Paris for you." },
      // No id from Gemini: call_<responseId>_<n>. The part's thoughtSignature rides on the tool_call, tagged as Gemini's own.
      { type: 'tool_call', id: 'call_mZ3FaJ7XLMGd1dkP8qKxgAo_0', name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}', signature: FC_SIG, origin: 'gemini' },
    ],
    stopReason: 'tool_calls',
    // promptTokenCount 2154 includes cachedContentTokenCount 2031: input 2154 - 2031 = 123.
    // candidatesTokenCount 38 excludes thoughtsTokenCount 192: output 38, reasoning 192.
    usage: { input: 123, cached: 2031, cacheWrite: null, output: 38, reasoning: 192 },
  });
  t.equal(totalTokens(res.usage!), 2384, '123 + 2031 + 38 + 192');
  t.equal(totalTokens(res.usage!), body.usageMetadata.totalTokenCount, 'the buckets add up to totalTokenCount: nothing counted twice');
});

t.test('geminiUsage: absent counts are null, toolUsePromptTokenCount is input, garbage is null', async (t) => {
  t.strictSame(geminiUsage({ promptTokenCount: 12, candidatesTokenCount: 4, totalTokenCount: 16 }), { input: 12, cached: null, cacheWrite: null, output: 4, reasoning: null });
  t.strictSame(geminiUsage({ promptTokenCount: 12, totalTokenCount: 12 }), { input: 12, cached: null, cacheWrite: null, output: null, reasoning: null }, 'a first stream chunk: no candidates count yet');
  t.strictSame(geminiUsage({ promptTokenCount: 0, candidatesTokenCount: 0, cachedContentTokenCount: 0, thoughtsTokenCount: 0 }), { input: 0, cached: 0, cacheWrite: null, output: 0, reasoning: 0 }, 'zeros stay zeros');
  // Google Search grounding: 40 prompt + 310 tool-use prompt + 25 candidates + 60 thoughts = 435.
  const grounded = { promptTokenCount: 40, candidatesTokenCount: 25, toolUsePromptTokenCount: 310, thoughtsTokenCount: 60, totalTokenCount: 435 };
  const u = geminiUsage(grounded)!;
  t.strictSame(u, { input: 350, cached: null, cacheWrite: null, output: 25, reasoning: 60 }, 'tool-use prompt tokens are billed as input: 40 + 310');
  t.equal(totalTokens(u), grounded.totalTokenCount);
  t.strictSame(geminiUsage({ promptTokenCount: 100, cachedContentTokenCount: 120, candidatesTokenCount: 1 }), { input: 0, cached: 120, cacheWrite: null, output: 1, reasoning: null }, 'inconsistent numbers never make a bucket negative');
  t.strictSame(geminiUsage({ promptTokenCount: 10.4, candidatesTokenCount: 'x' }), { input: 10, cached: null, cacheWrite: null, output: null, reasoning: null });
  for (const raw of [undefined, null, 7, 'usage', [], {}, { totalTokenCount: 50 }, { promptTokenCount: -1 }, { promptTokenCount: NaN, candidatesTokenCount: Infinity }]) {
    t.equal(geminiUsage(raw), null, JSON.stringify(raw) ?? String(raw));
  }
});

t.test('renderGeminiUsage: prompt = input + cached (+ cache write), total = sum, null buckets left out', async (t) => {
  t.strictSame(renderGeminiUsage({ input: 123, cached: 2031, cacheWrite: null, output: 38, reasoning: 192 }), {
    promptTokenCount: 2154,
    candidatesTokenCount: 38,
    totalTokenCount: 2384,
    cachedContentTokenCount: 2031,
    thoughtsTokenCount: 192,
  });
  // An Anthropic answer: 10 input, 2000 cache read, 300 cache write, 50 output. Gemini has no cache-write count.
  t.strictSame(renderGeminiUsage({ input: 10, cached: 2000, cacheWrite: 300, output: 50, reasoning: null }), {
    promptTokenCount: 2310,
    candidatesTokenCount: 50,
    totalTokenCount: 2360,
    cachedContentTokenCount: 2000,
  });
  t.strictSame(renderGeminiUsage({ input: null, cached: null, cacheWrite: null, output: 7, reasoning: null }), { candidatesTokenCount: 7, totalTokenCount: 7 });
  const u = { input: 5, cached: 0, cacheWrite: null, output: 0, reasoning: 0 };
  t.strictSame(geminiUsage(renderGeminiUsage(u)), u, 'round trip, zeros included');
});

t.test('renderResponse: the GenerateContentResponse a Gemini client reads', async (t) => {
  const res: CanonicalResponse = {
    id: 'chatcmpl-abc',
    model: 'gpt-4o-2024-08-06',
    content: [
      { type: 'reasoning', text: 'Think.', signature: 'sig-9', origin: 'gemini' },
      { type: 'reasoning', text: '', opaque: 'x', redacted: true },
      { type: 'text', text: 'Sure.' },
      { type: 'tool_call', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', arguments: '{"location":"Paris"}' },
      { type: 'tool_call', id: 'call_2', name: 'bad', arguments: '{"location":' },
    ],
    stopReason: 'tool_calls',
    usage: { input: 82, cached: 0, cacheWrite: null, output: 17, reasoning: 0 },
  };
  t.strictSame(geminiCodec.renderResponse(res, 'openai/gpt-4o'), {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { text: 'Think.', thought: true, thoughtSignature: 'sig-9' },
            { text: 'Sure.' },
            { functionCall: { id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', args: { location: 'Paris' } } },
            { functionCall: { id: 'call_2', name: 'bad', args: {} } },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 82, candidatesTokenCount: 17, totalTokenCount: 99, cachedContentTokenCount: 0, thoughtsTokenCount: 0 },
    modelVersion: 'openai/gpt-4o',
    responseId: 'chatcmpl-abc',
  });
  const bare = geminiCodec.renderResponse({ id: '', model: 'm', content: [], stopReason: 'max_tokens', usage: null }, 'gemini-x') as Record<string, unknown>;
  t.strictSame(bare, { candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'MAX_TOKENS', index: 0 }], modelVersion: 'gemini-x' }, 'no usage, no id: left out');
});

t.test('canonical -> renderResponse -> parseResponse round trips', async (t) => {
  const fromFixture = geminiCodec.parseResponse(fixture('generate-thought-text-call.json'));
  t.strictSame(geminiCodec.parseResponse(geminiCodec.renderResponse(fromFixture, 'gemini-2.5-flash')), fromFixture, 'the fixture answer');
  const signed: CanonicalResponse = {
    id: 'r-1',
    model: 'gemini-3-pro-preview',
    content: [
      { type: 'reasoning', text: 'Plan.', signature: 'EvYBCvMBAdHtim8', origin: 'gemini' },
      { type: 'text', text: 'First.' },
      { type: 'text', text: 'Second.' },
      { type: 'tool_call', id: 'toolu_01', name: 'f', arguments: '{"a":[1,2],"b":{"c":null}}' },
      { type: 'tool_call', id: 'toolu_02', name: 'g', arguments: '{}' },
    ],
    stopReason: 'tool_calls',
    usage: { input: 1, cached: null, cacheWrite: null, output: 2, reasoning: 3 },
  };
  t.strictSame(geminiCodec.parseResponse(geminiCodec.renderResponse(signed, 'gemini-3-pro-preview')), signed, 'reasoning signature and tool-call ids survive');
  const stops: [StopReason, StopReason][] = [
    ['end', 'end'],
    ['max_tokens', 'max_tokens'],
    ['content_filter', 'content_filter'],
    ['error', 'error'],
    ['stop_sequence', 'end'],
    ['refusal', 'content_filter'],
    ['tool_calls', 'end'],
  ];
  for (const [stop, back] of stops) {
    const r: CanonicalResponse = { id: 'r', model: 'm', content: [{ type: 'text', text: 'x' }], stopReason: stop, usage: null };
    t.equal(geminiCodec.parseResponse(geminiCodec.renderResponse(r, 'm')).stopReason, back, `${stop} -> ${back} (without a tool call)`);
  }
});

t.test('parseResponse: finish reasons, blocked prompts and odd bodies', async (t) => {
  const withFinish = (finishReason: string | undefined, parts: unknown[] = [{ text: 'x' }]) =>
    geminiCodec.parseResponse({ candidates: [{ content: { role: 'model', parts }, ...(finishReason && { finishReason }), index: 0 }] }).stopReason;
  const table: Record<string, StopReason> = {
    STOP: 'end',
    MAX_TOKENS: 'max_tokens',
    SAFETY: 'content_filter',
    RECITATION: 'content_filter',
    BLOCKLIST: 'content_filter',
    PROHIBITED_CONTENT: 'content_filter',
    SPII: 'content_filter',
    IMAGE_SAFETY: 'content_filter',
    MALFORMED_FUNCTION_CALL: 'error',
    OTHER: 'error',
    LANGUAGE: 'error',
    FINISH_REASON_UNSPECIFIED: 'error',
  };
  for (const [reason, stop] of Object.entries(table)) t.equal(withFinish(reason), stop, reason);
  t.equal(withFinish('STOP', [{ functionCall: { name: 'f', args: {} } }]), 'tool_calls');
  t.equal(withFinish('MAX_TOKENS', [{ functionCall: { name: 'f', args: {} } }]), 'max_tokens');
  t.equal(withFinish(undefined), 'end', 'no finishReason');

  const blocked = geminiCodec.parseResponse({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: 'gemini-2.5-flash', responseId: 'b1' });
  t.strictSame(blocked, { id: 'b1', model: 'gemini-2.5-flash', content: [], stopReason: 'content_filter', usage: { input: 9, cached: null, cacheWrite: null, output: null, reasoning: null } });

  const odd = geminiCodec.parseResponse({
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { text: '' },
            { text: '', thoughtSignature: 'only-sig' },
            { text: '', thought: true, thoughtSignature: 'thought-sig' },
            { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
            { executableCode: { language: 'PYTHON', code: 'print(1)' } },
            { functionCall: { id: 'fc-7', name: 'f' } },
            { functionCall: { name: 'g', args: { n: 1 } } },
            null,
          ],
        },
        finishReason: 'STOP',
      },
      { content: { parts: [{ text: 'second candidate' }] } },
    ],
  });
  // No responseId: the made-up id takes 12 random hex digits in its place.
  const made = (odd.content[2] as { id: string }).id;
  t.match(made, /^call_[0-9a-f]{12}_1$/, 'a call without id and an answer without responseId: call_<random>_<n>');
  const long = geminiCodec.parseResponse({ responseId: `${'R'.repeat(5000)}/+=`, candidates: [{ content: { parts: Array.from({ length: 120 }, () => ({ functionCall: { name: 'f', args: {} } })) }, finishReason: 'STOP' }] });
  const ids = long.content.map((p) => (p as { id: string }).id);
  t.equal(ids.at(-1), `call_${'R'.repeat(24)}_119`, 'a long responseId: its first 24 characters');
  t.ok(ids.every((id) => id.length <= 40), "every id within OpenAI's 40 characters, the 120th call's too");
  t.strictSame(odd.content, [
    { type: 'reasoning', text: '', signature: 'thought-sig', origin: 'gemini' },
    { type: 'tool_call', id: 'fc-7', name: 'f', arguments: '{}' },
    { type: 'tool_call', id: made, name: 'g', arguments: '{"n":1}' },
  ], 'empty text dropped, a signature-only thought kept, media/code parts skipped, Gemini ids kept, only the first candidate');
  t.strictSame({ id: odd.id, model: odd.model, usage: odd.usage }, { id: '', model: '', usage: null });

  for (const bad of [null, 'text', 42, []]) {
    let code: string | undefined;
    try {
      geminiCodec.parseResponse(bad);
    } catch (err) {
      code = err instanceof TollgateError ? err.code : String(err);
    }
    t.equal(code, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', JSON.stringify(bad));
  }
});
