// Shared data and machinery of the codec conformance suite (test/providers/conformance*.test.ts): the codecs under
// test (read from the registry, so a new codec is included without editing the suite), the canonical cases every
// codec must carry, the per-codec expectation rules (their instances, one per format, are data in
// test/fixtures/conformance/<format>.ts), and the stream plumbing: canonical events -> SSE text -> SseParser fed in
// seeded random chunk sizes -> canonical events -> an assembled view of the answer.

import type { ModelConfig, WireFormat } from '../../src/config/types.js';
import { parseConfig } from '../../src/config/load.js';
import { CONFIG_SCHEMA } from '../../src/config/schema.js';
import type { StreamRenderer, Target, WireCodec } from '../../src/wire/codec.js';
import { codecFor } from '../../src/wire/registry.js';
import { SseParser, type SseFrame } from '../../src/wire/sse.js';
import type {
  CanonicalEvent, CanonicalRequest, CanonicalResponse, Message, Origin, Part, StopReason, ToolDefinition,
} from '../../src/wire/canonical.js';
import { BUCKETS, NO_USAGE, type Bucket, type Usage } from '../../src/ledger/types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

// ---------------------------------------------------------------------------------------------------------------
// The codecs under test: every format the config accepts, resolved through the registry. Aliases (mock answers
// with the openai codec) are folded into the codec they resolve to.
// ---------------------------------------------------------------------------------------------------------------

export interface CodecUnderTest {
  /** The codec's own format name. */
  readonly format: string;
  readonly codec: WireCodec;
  /** Config formats that resolve to this codec (the codec's own first). */
  readonly formats: readonly WireFormat[];
}

/** The `format:` enum of a provider row, as the config schema (and so the registry's key type) lists it. */
export function configFormats(): WireFormat[] {
  const schema = CONFIG_SCHEMA as unknown as { properties: { providers: { additionalProperties: { properties: { format: { enum: WireFormat[] } } } } } };
  return [...schema.properties.providers.additionalProperties.properties.format.enum];
}

export function registryCodecs(): CodecUnderTest[] {
  const byCodec = new Map<WireCodec, WireFormat[]>();
  for (const f of configFormats()) {
    const c = codecFor(f);
    byCodec.set(c, [...(byCodec.get(c) ?? []), f]);
  }
  return [...byCodec.entries()].map(([codec, formats]) => ({
    format: codec.format,
    codec,
    formats: [...formats].sort((a, b) => (a === codec.format ? -1 : b === codec.format ? 1 : 0)),
  }));
}

// ---------------------------------------------------------------------------------------------------------------
// Expectation rules. A codec may lose what its wire format cannot carry (or what it documents it drops); each loss
// is one rule: what is lost, where the codec says so, and the transformation it makes on the canonical value.
// `documented: false` marks a loss the format forces but the codec's comments do not mention (reported, not failed).
// ---------------------------------------------------------------------------------------------------------------

export interface Rule<T> {
  readonly what: string;
  readonly cite: string;
  readonly documented: boolean;
  readonly apply: (x: T) => T;
}

export const applyRules = <T>(rules: readonly Rule<T>[], x: T): T => rules.reduce((acc, r) => r.apply(acc), x);

/** How a format's usage block carries the five buckets (whole answers and streams alike). */
export interface UsageRule {
  /** Buckets the format has no field for, and the bucket their tokens are counted in instead. */
  readonly folds: Partial<Record<Bucket, Bucket>>;
  /** Buckets the format always writes: a null (not reported) one comes back as 0. */
  readonly zeroWhenNull: readonly Bucket[];
  /** What no usage at all (null) comes back as: null, or the format's always-present fields as zeros. */
  readonly nullUsage: 'null' | 'zeros';
  readonly cite: string;
}

export function applyUsageRule(r: UsageRule, u: Usage | null): Usage | null {
  if (u === null && r.nullUsage === 'null') return null;
  const out: Mutable<Usage> = { ...(u ?? NO_USAGE) };
  for (const [from, to] of Object.entries(r.folds) as [Bucket, Bucket][]) {
    out[to] = out[to] === null && out[from] === null ? null : (out[to] ?? 0) + (out[from] ?? 0);
    out[from] = null;
  }
  for (const b of r.zeroWhenNull) if (out[b] === null) out[b] = 0;
  return out;
}

export const usageTotal = (u: Usage | null): number => BUCKETS.reduce((s, b) => s + ((u ?? NO_USAGE)[b] ?? 0), 0);

// Rule builders ---------------------------------------------------------------------------------------------------

export function dropFields(...keys: (keyof CanonicalRequest)[]): (r: CanonicalRequest) => CanonicalRequest {
  return (r) => {
    const out: Record<string, unknown> = { ...r };
    for (const k of keys) delete out[k];
    return out as unknown as CanonicalRequest;
  };
}

type Place = 'system' | 'user' | 'assistant';

/** Rewrites every part of a request (system, messages, tool-result contents); null removes the part. */
export function mapRequestParts(fn: (p: Part, place: Place) => Part | null): (r: CanonicalRequest) => CanonicalRequest {
  const each = (parts: readonly Part[], place: Place): Part[] =>
    parts.flatMap((p) => {
      const q = p.type === 'tool_result' ? { ...p, content: each(p.content, place) } : p;
      const out = fn(q, place);
      return out === null ? [] : [out];
    });
  return (r) => ({
    ...r,
    system: each(r.system, 'system'),
    messages: r.messages.map((m): Message => ({ role: m.role, content: each(m.content, m.role) })),
  });
}

export function mapResponseParts(fn: (p: Part) => Part | null): (r: CanonicalResponse) => CanonicalResponse {
  return (r) => ({ ...r, content: r.content.flatMap((p) => { const q = fn(p); return q === null ? [] : [q]; }) });
}

export function mapTools(fn: (t: ToolDefinition) => ToolDefinition): (r: CanonicalRequest) => CanonicalRequest {
  return (r) => (r.tools === undefined ? r : { ...r, tools: r.tools.map(fn) });
}

/** Removes optional keys from an object (a part, a tool) without touching the rest. */
export function without<T extends object>(o: T, ...keys: string[]): T {
  const out = { ...o } as Record<string, unknown>;
  for (const k of keys) delete out[k];
  return out as T;
}

/** Tool-call arguments as a format that carries them as a JSON object gives them back: re-serialised. */
export const reserialised = (args: string): string => {
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return '{}';
  }
};

// ---------------------------------------------------------------------------------------------------------------
// The per-format profile: targets, the family's own opaque data, and the expectation rules (data in
// test/fixtures/conformance/<format>.ts).
// ---------------------------------------------------------------------------------------------------------------

export interface StreamRendererVariant {
  readonly label: string;
  readonly make: (codec: WireCodec, model: string) => StreamRenderer;
  /** Whether the final usage reaches the client in this variant ('none': documented, see cite). */
  readonly usage: 'carried' | 'none';
  readonly cite: string;
}

export interface ConformanceProfile {
  readonly format: string;
  /** The opaque-data family of the format (canonical Origin). */
  readonly family: Origin;
  /** A provider base_url as configured for this format. */
  readonly baseUrl: string;
  /** Raw config of the two models every case is built for: `plain` (no reasoning) and `reasoning`. */
  readonly models: { readonly plain: Record<string, unknown>; readonly reasoning: Record<string, unknown> };
  /**
   * Assistant parts exactly as this family's parser produces them, carrying the family's opaque data
   * (signatures, redacted or encrypted reasoning). Used in history (request cases) and in answers.
   */
  readonly familyParts: readonly Part[];
  /** The opaque strings in familyParts: they must never be sent to, or shown to a client of, another family. */
  readonly secrets: readonly string[];
  /**
   * Secrets a client of another family is shown on purpose, by that family: its format has a place that sends them
   * back to this family (a Gemini call signature as a Chat call's `extra_content`, docs/translation.md).
   */
  readonly shownTo?: Partial<Record<Origin, readonly string[]>>;
  /** Why the body buildRequest makes is (or is not) a client request parseRequest accepts. */
  readonly clientRequest: string;
  /** Extra checks on the built upstream request (e.g. Gemini: model and stream live in the URL). */
  readonly checkBuilt?: (req: CanonicalRequest, path: string) => string[];
  readonly request: readonly Rule<CanonicalRequest>[];
  readonly response: readonly Rule<CanonicalResponse>[];
  /** A rendered answer's id, from the canonical id. */
  readonly responseId: { readonly prefix: string; readonly cite: string };
  readonly usage: UsageRule;
  /** USAGE_FULL after a whole-answer round trip, written out (checks the usage rule itself). */
  readonly usageFullRoundTrip: Usage | null;
  readonly streamRenderers: readonly StreamRendererVariant[];
  /** The opaque data of a reasoning part (or of a streamed reasoning block) that must survive the trip. */
  readonly opaqueEssence: (p: { readonly signature?: string; readonly opaque?: string }) => string | undefined;
  /** What the client sees when the stream fails: renderer.error(...) parsed back by the same codec. */
  readonly streamError: { readonly errorEvent: boolean; readonly terminated: boolean; readonly cite: string };
}

/** The profile a codec without its own fixture file is held to: nothing may be lost. */
export function strictProfile(format: string): ConformanceProfile {
  return {
    format,
    family: format as Origin,
    baseUrl: 'https://upstream.example.com/v1',
    models: {
      plain: { capabilities: ['vision', 'pdf', 'tools', 'structured_output'] },
      reasoning: { capabilities: ['vision', 'pdf', 'tools', 'structured_output', 'reasoning'] },
    },
    familyParts: [{ type: 'reasoning', text: 'Thinking it over.' }],
    secrets: [],
    clientRequest: 'no profile: the built body must be a client request parseRequest reads back whole',
    request: [],
    response: [],
    responseId: { prefix: '', cite: 'no profile' },
    usage: { folds: {}, zeroWhenNull: [], nullUsage: 'null', cite: 'no profile' },
    usageFullRoundTrip: USAGE_FULL,
    streamRenderers: [{ label: 'createStreamRenderer', make: (c, m) => c.createStreamRenderer(m), usage: 'carried', cite: 'no profile' }],
    opaqueEssence: (p) => p.signature ?? p.opaque,
    streamError: { errorEvent: true, terminated: false, cite: 'no profile' },
  };
}

export const MODEL_PLAIN = 'conf-plain';
export const MODEL_REASONING = 'conf-reasoning';

/** The Target a profile's provider row gives for one of its two models. */
export function targetFor(p: ConformanceProfile, format: WireFormat, which: 'plain' | 'reasoning'): Target {
  const cfg = parseConfig(
    {
      providers: {
        conf: {
          group: 'paid',
          format,
          base_url: p.baseUrl,
          auth: { type: 'api_key', key: 'sk-conformance' },
          models: { [MODEL_PLAIN]: p.models.plain, [MODEL_REASONING]: p.models.reasoning },
        },
      },
    },
    {},
  );
  const provider = cfg.providers.conf!;
  const modelId = which === 'plain' ? MODEL_PLAIN : MODEL_REASONING;
  return { providerId: 'conf', provider, modelId, model: (provider.models[modelId] ?? null) as ModelConfig | null };
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical cases
// ---------------------------------------------------------------------------------------------------------------

export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
export const PDF = 'JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSPj4Kc3RyZWFtCg==';
export const IMAGE_URL = 'https://upload.wikimedia.org/wikipedia/commons/a/a8/Tour_Eiffel_Wikimedia_Commons.jpg';

export const WEATHER_TOOL: ToolDefinition = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['C', 'F'] } }, required: ['city', 'unit'], additionalProperties: false },
  strict: true,
};
export const TIME_TOOL: ToolDefinition = { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] } };

/** Tool-call arguments are compact JSON: the text survives formats that carry arguments as an object. */
export const WEATHER_ARGS = '{"city":"Paris","unit":"C"}';
export const TIME_ARGS = '{"tz":"Europe/Paris"}';

/** Multi-byte text (umlaut, CJK, an astral emoji) so that split UTF-8 sequences are exercised by chunked SSE. */
export const ANSWER_TEXT = 'Paris: 21 °C and sunny. Grüße aus 東京 🌤 — bis bald!';

/** All five buckets reported. */
export const USAGE_FULL: Usage = { input: 10, cached: 4, cacheWrite: 3, output: 5, reasoning: 2 };
/** Only input and output reported. */
export const USAGE_PARTIAL: Usage = { input: 12, cached: null, cacheWrite: null, output: 7, reasoning: null };
/** Cached and reasoning reported, no cache write. */
export const USAGE_MIXED: Usage = { input: 8, cached: 2, cacheWrite: null, output: 9, reasoning: 3 };

export interface RequestCase {
  readonly name: string;
  /** Which of the profile's models the case is built for. */
  readonly model: 'plain' | 'reasoning';
  readonly request: CanonicalRequest;
}

const user = (...content: Part[]): Message => ({ role: 'user', content });
const assistant = (...content: Part[]): Message => ({ role: 'assistant', content });
const text = (t: string): Part => ({ type: 'text', text: t });

const TOOL_HISTORY: Message[] = [
  user(text('What is the weather in Paris, and the time there?')),
  assistant(
    text('Let me check both.'),
    { type: 'tool_call', id: 'call_w1', name: 'get_weather', arguments: WEATHER_ARGS },
    { type: 'tool_call', id: 'call_t1', name: 'get_time', arguments: TIME_ARGS },
  ),
  user(
    { type: 'tool_result', callId: 'call_w1', name: 'get_weather', content: [text('Sunny, 21 C')] },
    { type: 'tool_result', callId: 'call_t1', name: 'get_time', content: [text('14:05')] },
  ),
];

/** The cases every codec must carry, built for one profile (the reasoning case uses that family's own parts). */
export function requestCases(p: ConformanceProfile): RequestCase[] {
  const base = { model: MODEL_PLAIN, system: [], stream: false } as const;
  const tools = (toolChoice: CanonicalRequest['toolChoice']): CanonicalRequest => ({
    ...base,
    messages: TOOL_HISTORY,
    tools: [WEATHER_TOOL, TIME_TOOL],
    toolChoice,
    maxTokens: 512,
  });
  const familyCalls = p.familyParts.filter((x): x is Extract<Part, { type: 'tool_call' }> => x.type === 'tool_call');
  const cases: RequestCase[] = [
    { name: 'plain text', model: 'plain', request: { ...base, messages: [user(text('Hello there!'))] } },
    {
      name: 'system + multi-turn (streamed)',
      model: 'plain',
      request: {
        ...base,
        system: [text('You are a terse travel assistant.'), text('Always answer in English.')],
        messages: [
          user(text('Where is the Eiffel Tower?')),
          assistant(text('In Paris.')),
          user(text('How tall is it?')),
        ],
        stream: true,
      },
    },
    {
      name: 'sampling parameters',
      model: 'plain',
      request: {
        ...base,
        messages: [user(text('Write a haiku.'))],
        maxTokens: 200,
        temperature: 0.4,
        topP: 0.9,
        topK: 40,
        stop: ['END'],
        seed: 42,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
        user: 'user-1234',
        metadata: { team: 'docs' },
      },
    },
    {
      name: 'image + PDF (inline)',
      model: 'plain',
      request: {
        ...base,
        messages: [
          user(
            text('Describe the image and summarise the report.'),
            { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG }, detail: 'high' },
            { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: PDF }, filename: 'report.pdf' },
          ),
        ],
      },
    },
    {
      name: 'image by URL',
      model: 'plain',
      request: { ...base, messages: [user(text('What is in this picture?'), { type: 'image', source: { kind: 'url', url: IMAGE_URL } })] },
    },
    { name: 'tools, tool_choice auto, call + result in history', model: 'plain', request: tools({ type: 'auto' }) },
    { name: 'tools, tool_choice required, call + result in history', model: 'plain', request: tools({ type: 'required' }) },
    { name: 'tools, tool_choice named, call + result in history', model: 'plain', request: tools({ type: 'tool', name: 'get_weather' }) },
    {
      name: 'structured output (json_schema)',
      model: 'plain',
      request: {
        ...base,
        messages: [user(text('Weather in Paris as JSON.'))],
        responseFormat: {
          type: 'json_schema',
          name: 'weather',
          schema: { type: 'object', properties: { city: { type: 'string' }, temp_c: { type: 'number' } }, required: ['city', 'temp_c'], additionalProperties: false },
          strict: true,
        },
      },
    },
    {
      name: `reasoning in history (${p.family} opaque data)`,
      model: 'reasoning',
      request: {
        ...base,
        model: MODEL_REASONING,
        messages: [
          user(text('What is the weather in Paris?')),
          assistant(...p.familyParts, text('Checking.')),
          ...(familyCalls.length > 0 ? [user(...familyCalls.map((c): Part => ({ type: 'tool_result', callId: c.id, name: c.name, content: [text('Sunny, 21 C')] })))] : []),
          user(text('Thanks. And tomorrow?')),
        ],
        tools: familyCalls.length > 0 ? [WEATHER_TOOL] : undefined,
        maxTokens: 4000,
      },
    },
  ];
  return cases.map((c) => (c.request.tools === undefined ? { ...c, request: without(c.request, 'tools') } : c));
}

export interface ResponseCase {
  readonly name: string;
  readonly response: CanonicalResponse;
}

/** Whole answers every codec must carry, for one profile (the reasoning case holds that family's own parts). */
export function responseCases(p: ConformanceProfile): ResponseCase[] {
  const r = (id: string, content: Part[], stopReason: StopReason, usage: Usage | null): CanonicalResponse => ({ id, model: 'upstream-model', content, stopReason, usage });
  const familyHasCall = p.familyParts.some((x) => x.type === 'tool_call');
  return [
    { name: 'text, stop end, usage with all five buckets', response: r('conf0001', [text(ANSWER_TEXT)], 'end', USAGE_FULL) },
    { name: 'text, stop max_tokens, usage with null buckets', response: r('conf0002', [text('The tower is 330 m tall and was bu')], 'max_tokens', USAGE_PARTIAL) },
    {
      name: 'text + two tool calls, stop tool_calls',
      response: r('conf0003', [
        text('Let me check both.'),
        { type: 'tool_call', id: 'call_w1', name: 'get_weather', arguments: WEATHER_ARGS },
        { type: 'tool_call', id: 'call_t1', name: 'get_time', arguments: TIME_ARGS },
      ], 'tool_calls', USAGE_MIXED),
    },
    { name: 'one tool call with empty arguments, no text', response: r('conf0004', [{ type: 'tool_call', id: 'call_n1', name: 'get_time', arguments: '{}' }], 'tool_calls', USAGE_PARTIAL) },
    {
      name: `reasoning (${p.family} opaque data) + text`,
      response: r('conf0005', [...p.familyParts.filter((x) => x.type === 'reasoning'), text(ANSWER_TEXT), ...p.familyParts.filter((x) => x.type === 'tool_call')], familyHasCall ? 'tool_calls' : 'end', USAGE_FULL),
    },
    { name: 'text, no usage reported', response: r('conf0006', [text('Done.')], 'end', null) },
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------------------------

/** A small seeded PRNG (mulberry32): the chunking of every stream is random but the same on every run. */
export function prng(seed: string): () => number {
  let h = 1779033703 ^ seed.length;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 3432918353), (h = (h << 13) | (h >>> 19));
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Splits text into pieces of 1..size code points (never inside a surrogate pair). */
function pieces(s: string, size: number): string[] {
  const cps = [...s];
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

/**
 * A whole answer as the canonical events a producer sends: start, an early input-side usage report, each part as
 * its own block (text and arguments in small deltas; a reasoning part's signature, or its opaque data, as a
 * reasoning_signature event with the part's origin), finish, then the final usage (after the finish, as an OpenAI upstream reports it).
 * Redacted reasoning has no canonical event and is left out; so is a tool call's signature (tool_call_start has no
 * field for it).
 */
export function eventsOf(res: CanonicalResponse): CanonicalEvent[] {
  const out: CanonicalEvent[] = [{ type: 'start', id: res.id, model: res.model }];
  if (res.usage !== null) out.push({ type: 'usage', usage: { ...res.usage, output: null, reasoning: null } });
  let index = 0;
  for (const p of res.content) {
    if (p.type === 'text') {
      const i = index++;
      out.push({ type: 'text_start', index: i }, ...pieces(p.text, 5).map((t): CanonicalEvent => ({ type: 'text_delta', index: i, text: t })), { type: 'block_stop', index: i });
    } else if (p.type === 'reasoning') {
      if (p.redacted === true) continue;
      const i = index++;
      out.push({ type: 'reasoning_start', index: i }, ...pieces(p.text, 7).map((t): CanonicalEvent => ({ type: 'reasoning_delta', index: i, text: t })));
      const sig = p.signature ?? p.opaque;
      if (sig !== undefined) out.push(p.origin === undefined ? { type: 'reasoning_signature', index: i, signature: sig } : { type: 'reasoning_signature', index: i, signature: sig, origin: p.origin });
      out.push({ type: 'block_stop', index: i });
    } else if (p.type === 'tool_call') {
      const i = index++;
      const start: CanonicalEvent = p.signature === undefined || p.origin === undefined
        ? { type: 'tool_call_start', index: i, id: p.id, name: p.name }
        : { type: 'tool_call_start', index: i, id: p.id, name: p.name, signature: p.signature, origin: p.origin };
      out.push(start, ...pieces(p.arguments, 4).map((a): CanonicalEvent => ({ type: 'tool_call_delta', index: i, arguments: a })), { type: 'block_stop', index: i });
    }
  }
  out.push({ type: 'finish', stopReason: res.stopReason });
  if (res.usage !== null) out.push({ type: 'usage', usage: res.usage });
  return out;
}

/** The SSE text a renderer writes for some events: event() for each, then end(). */
export function renderSse(r: StreamRenderer, events: readonly CanonicalEvent[]): string {
  return events.map((e) => r.event(e)).join('') + r.end();
}

/** SSE frames of some text, its UTF-8 bytes pushed in random chunks of 1..maxChunk bytes (seeded). */
export function framesOf(sse: string, seed: string, maxChunk = 9): SseFrame[] {
  const bytes = new TextEncoder().encode(sse);
  const rnd = prng(seed);
  const p = new SseParser();
  const frames: SseFrame[] = [];
  for (let i = 0; i < bytes.length; ) {
    const n = 1 + Math.floor(rnd() * maxChunk);
    frames.push(...p.push(bytes.subarray(i, i + n)));
    i += n;
  }
  return [...frames, ...p.end()];
}

export interface Parsed {
  readonly events: CanonicalEvent[];
  readonly terminated: boolean;
  /** A parser that refused the input (a TollgateError the pipeline turns into the client's error). */
  readonly threw: Error | null;
}

export function parseFrames(codec: WireCodec, frames: readonly SseFrame[]): Parsed {
  const parser = codec.createStreamParser();
  const events: CanonicalEvent[] = [];
  try {
    for (const f of frames) events.push(...parser.frame(f));
    events.push(...parser.end());
  } catch (err) {
    return { events, terminated: parser.terminated, threw: err as Error };
  }
  return { events, terminated: parser.terminated, threw: null };
}

/** One block of an answer, as compared across a trip. */
export type BlockView =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'reasoning'; readonly text: string; readonly opaque: string | undefined }
  | { readonly kind: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: string };

export interface AnswerView {
  readonly blocks: BlockView[];
  readonly stopReason: StopReason | null;
  readonly usage: Usage | null;
}

type Essence = ConformanceProfile['opaqueEssence'];

/** The view of a whole answer (redacted reasoning and tool-call signatures have no place in a stream). */
export function responseView(res: CanonicalResponse, essence: Essence): AnswerView {
  const blocks = res.content.flatMap((p): BlockView[] => {
    if (p.type === 'text') return [{ kind: 'text', text: p.text }];
    if (p.type === 'reasoning') return p.redacted === true ? [] : [{ kind: 'reasoning', text: p.text, opaque: essence(p) }];
    if (p.type === 'tool_call') return [{ kind: 'tool_call', id: p.id, name: p.name, arguments: p.arguments }];
    return [];
  });
  return { blocks, stopReason: res.stopReason, usage: res.usage };
}

/** The answer the events describe, assembled by block index as a consumer does; the last usage event wins. */
export function streamView(events: readonly CanonicalEvent[], essence: Essence): AnswerView {
  const blocks = new Map<number, { kind: BlockView['kind']; text: string; sig: string; id: string; name: string }>();
  let stopReason: StopReason | null = null;
  let usage: Usage | null = null;
  const block = (index: number) => blocks.get(index) ?? { kind: 'text' as const, text: '', sig: '', id: '', name: '' };
  for (const e of events) {
    switch (e.type) {
      case 'text_start':
        blocks.set(e.index, { kind: 'text', text: '', sig: '', id: '', name: '' });
        break;
      case 'reasoning_start':
        blocks.set(e.index, { kind: 'reasoning', text: '', sig: '', id: '', name: '' });
        break;
      case 'tool_call_start':
        blocks.set(e.index, { kind: 'tool_call', text: '', sig: '', id: e.id, name: e.name });
        break;
      case 'text_delta':
      case 'reasoning_delta':
        blocks.set(e.index, { ...block(e.index), text: block(e.index).text + e.text });
        break;
      case 'tool_call_delta':
        blocks.set(e.index, { ...block(e.index), text: block(e.index).text + e.arguments });
        break;
      case 'reasoning_signature':
        blocks.set(e.index, { ...block(e.index), sig: block(e.index).sig + e.signature });
        break;
      case 'finish':
        stopReason = e.stopReason;
        break;
      case 'usage':
        usage = e.usage;
        break;
      default:
        break;
    }
  }
  const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => b);
  return {
    blocks: ordered.map((b): BlockView => {
      if (b.kind === 'reasoning') return { kind: 'reasoning', text: b.text, opaque: b.sig === '' ? undefined : essence({ signature: b.sig }) };
      if (b.kind === 'tool_call') return { kind: 'tool_call', id: b.id, name: b.name, arguments: b.text };
      return { kind: 'text', text: b.text };
    }),
    stopReason,
    usage,
  };
}

/**
 * Breaches of the event rules of canonical.ts: one `start`, first; block indexes 0, 1, ... in order, each opened
 * by one *_start and closed by one block_stop, deltas only inside an open block of their kind; one finish.
 */
export function eventRuleBreaches(events: readonly CanonicalEvent[]): string[] {
  const out: string[] = [];
  const starts = events.filter((e) => e.type === 'start').length;
  if (starts !== 1) out.push(`${starts} start events`);
  if (events.length > 0 && events[0]!.type !== 'start') out.push(`first event is ${events[0]!.type}, not start`);
  const open = new Map<number, 'text' | 'reasoning' | 'tool'>();
  const closed = new Set<number>();
  let next = 0;
  let finishes = 0;
  const kindOf = { text_start: 'text', reasoning_start: 'reasoning', tool_call_start: 'tool' } as const;
  const deltaKind = { text_delta: 'text', reasoning_delta: 'reasoning', reasoning_signature: 'reasoning', tool_call_delta: 'tool' } as const;
  events.forEach((e, i) => {
    const at = `event ${i} (${e.type})`;
    if (e.type === 'text_start' || e.type === 'reasoning_start' || e.type === 'tool_call_start') {
      if (e.index !== next) out.push(`${at}: index ${e.index}, expected ${next}`);
      next = Math.max(next, e.index + 1);
      if (open.has(e.index) || closed.has(e.index)) out.push(`${at}: block ${e.index} opened twice`);
      open.set(e.index, kindOf[e.type]);
    } else if (e.type === 'text_delta' || e.type === 'reasoning_delta' || e.type === 'reasoning_signature' || e.type === 'tool_call_delta') {
      if (open.get(e.index) !== deltaKind[e.type]) out.push(`${at}: block ${e.index} is not an open ${deltaKind[e.type]} block`);
    } else if (e.type === 'block_stop') {
      if (!open.has(e.index)) out.push(`${at}: block ${e.index} is not open`);
      open.delete(e.index);
      closed.add(e.index);
    } else if (e.type === 'finish') {
      finishes++;
      if (open.size > 0) out.push(`${at}: blocks ${[...open.keys()].join(', ')} still open at finish`);
    }
  });
  if (open.size > 0) out.push(`blocks ${[...open.keys()].join(', ')} never stopped`);
  if (finishes > 1) out.push(`${finishes} finish events`);
  return out;
}

/**
 * Usage events must each carry the whole usage known so far (a later one replaces an earlier one, never adds to
 * it): every bucket an earlier report gave is still reported, and not smaller, in the last one.
 */
export function usageReplacementBreaches(events: readonly CanonicalEvent[]): string[] {
  const reports = events.flatMap((e) => (e.type === 'usage' ? [e.usage] : []));
  const last = reports.at(-1);
  if (last === undefined) return [];
  const out: string[] = [];
  reports.slice(0, -1).forEach((u, i) => {
    for (const b of BUCKETS) {
      const before = u[b];
      const after = last[b];
      if (before !== null && (after === null || after < before)) out.push(`usage report ${i} has ${b}=${before}, the last one ${after}: reports are not cumulative`);
    }
  });
  return out;
}

/** The SSE frames of a rendered stream, as text blocks (each ending in its blank line). */
export function sseFrameTexts(sse: string): string[] {
  return sse.split(/(?<=\n\n)/).filter((s) => s !== '');
}
