// The adapter conformance table: every provider format under test, each behind its fake upstream (a real HTTP
// server on 127.0.0.1 speaking that format, test/helpers/fake-*.ts), plus the built-in in-process `mock`. Every
// case of test/conformance/*.test.ts runs against every row; a row leaves a case only by naming it in `unsupported`
// with the reason (the case then records a passing "declared unsupported" assertion, never a skip).
//
// A row turns the suite's uniform scenarios (a text answer, parallel tool calls, a cut or stalled stream, an error
// status, ...) into its fake's behaviours, and carries what the gateway must make of them: the wire request it must
// send (path, auth header, where max_tokens and a thinking level go), the usage buckets it must record and the price
// they cost. To add a provider format: write its fake in test/helpers/, add a row here, and run the folder; each
// case it cannot pass yet is a line in `unsupported` with a reason (docs/conformance.md).

import type { IncomingMessage } from 'node:http';
import { DEFAULT_USAGE as OPENAI_USAGE, fakeProvider, startFakeOpenAI, type Behaviour as OpenAIBehaviour } from '../helpers/fake-openai.js';
import { DEFAULT_USAGE as RESP_USAGE, respProvider, startFakeResponses, type Behaviour as RespBehaviour } from '../helpers/fake-responses.js';
import { FAKE_USAGE as ANTH_USAGE, fakeAnthropicProvider, startFakeAnthropic, type AnthropicBehaviour } from '../helpers/fake-anthropic.js';
import { DEFAULT_USAGE as GEM_USAGE, geminiProvider, startFakeGemini, type GeminiBehaviour } from '../helpers/fake-gemini.js';

/** Every case of the suite; a row's `unsupported` names the ones it is excused from. */
export const CASES = [
  'request-shape', 'prefix', 'clamp', 'thinking', 'capabilities', 'stream-usage',
  'whole-answer', 'parallel-tools', 'stream', 'ledgers',
  'truncated', 'stream-error', 'not-json', 'status-table',
  'refused', 'connect-timeout', 'headers-timeout', 'stall', 'abort-before-headers', 'abort-mid-stream',
  'opaque-reasoning', 'keepalive', 'count-tokens', 'client-text', 'client-tool',
] as const;
export type CaseId = (typeof CASES)[number];

export type Json = Record<string, unknown>;
/** input, cached, cache write, output, reasoning (null: not reported). */
export type Buckets = readonly [number | null, number | null, number | null, number | null, number | null];
export interface Price { input: number; output: number; cached?: number; cache_write?: number; reasoning?: number }

/** What the gateway asks of a provider, in the suite's terms; each row turns it into its fake's behaviour. */
export type Scenario =
  | { kind: 'text'; delayMs?: number }
  /** Calls of TOOL_NAME with these arguments, all in one turn. */
  | { kind: 'tools'; args: readonly Json[] }
  | { kind: 'error'; status: number; message: string; headers?: Record<string, string> }
  /** The stream stops after its first text delta ('Hello'): the socket is dropped (cut) or stays open (stall). */
  | { kind: 'cut' }
  | { kind: 'stall' }
  /** The first text delta, then the format's own error inside the stream. */
  | { kind: 'stream-error' }
  /** Reasoning with the family's opaque data (a signature, encrypted content) where the format has any. */
  | { kind: 'thinking' };

export interface WireRequest {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Json;
}

/** A started upstream of one row. */
export interface Upstream {
  /** The provider config row pointing at it. */
  row(): Json;
  script(s: Scenario): void;
  readonly received: readonly WireRequest[];
  /** Responses the gateway hung up on. */
  readonly aborted: number;
  /** Further provider rows this upstream needs, by provider id. */
  extraRows(): Record<string, Json>;
  /** The model (`<provider>/<id>`) of a request whose answer starts after more than a second (scripted if need be). */
  delayed(): string;
  /** The model of a streamed request that sends its first text delta and then nothing for a long time. */
  stalling(): string;
}

export const TOOL_NAME = 'get_weather';
export const TOOL_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] };
export const FIRST_ARGS = { city: 'Paris', unit: 'celsius' };
export const SECOND_ARGS = { city: 'Tokyo', unit: 'celsius' };
/** The words of the text scenario, on every fake; the first one is what a cut or stalled stream sent. */
export const WORDS = ['Hello', ' from', ' conformance'];
export const TEXT = WORDS.join('');
/** The value of the config header every row sends (`headers:` in the provider config). */
export const CONFIG_HEADER = 'x-conformance-row';

export interface ProviderUnderTest {
  /** The provider id in the gateway config (the model prefix). */
  readonly id: string;
  readonly format: 'openai' | 'openai-responses' | 'anthropic' | 'gemini' | 'mock';
  /** Served in the gateway's process (mock): no socket, so nothing upstream sees a hang-up. */
  readonly inProcess: boolean;
  /** Model ids: `main` (tools, vision, reasoning), `capped` (max_output_tokens CAP), `plain` (vision only). */
  readonly models: { readonly main: string; readonly capped: string; readonly plain: string };
  start(t: { teardown(fn: () => unknown): void }): Promise<Upstream>;
  /** A config row of this format at `origin` (for the transport cases: a dead port, a silent TLS server). */
  rowAt(origin: string, extra?: Json): Json;
  /** The text and usage of a whole default answer; the text answer's text is TEXT except for mock. */
  readonly text: string;
  readonly usage: Buckets;
  readonly price: Price;
  /** The wire request for `model` (streamed or not): path and the provider key where the format carries it. */
  wirePath(model: string, stream: boolean): string;
  keyOf(headers: IncomingMessage['headers']): string | undefined;
  readonly key: string;
  /** Where the format carries max tokens, and a thinking level `(high)` for the main model. */
  maxTokensOf(body: Json): unknown;
  thinkingOf(body: Json): unknown;
  readonly thinkingHigh: unknown;
  /** How the max_output_tokens clamp shows: in the wire request, or (mock) in the answer's length. */
  readonly clampShows: 'wire' | 'answer';
  /** The tool fields a model without the `tools` capability must not receive. */
  readonly toolFields: readonly string[];
  /** The upstream's streamed usage is complete before the first delta is cut (Gemini repeats it on every chunk). */
  readonly cutUsage: 'estimated' | 'reported';
  /** Opaque reasoning this family produces and accepts back; null: none (OpenAI Chat has no opaque reasoning). */
  readonly family: 'openai-responses' | 'anthropic' | 'gemini' | null;
  /** A piece of the opaque reasoning data this provider's fake puts in a `thinking` answer; null: none. */
  readonly opaqueMark: string | null;
  /** Token counting: the client route that reaches this provider's own counter, or null (a 400 NOT_SUPPORTED). */
  readonly countTokens: 'anthropic' | 'gemini' | null;
  readonly unsupported: Partial<Record<CaseId, string>>;
}

export const CAP = 64;
const HEADERS = (id: string) => ({ headers: { [CONFIG_HEADER]: id } });
const TIMEOUTS = { timeouts: { connect_s: 2, stall_s: 1, request_s: 1 } };
/** Three models of one upstream id family: full capabilities, capped output, no tools and no reasoning. */
function models(main: string, thinking: string | undefined): Json {
  const full = { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], ...(thinking ? { thinking } : {}) };
  return { [main]: full, [`${main}-capped`]: { ...full, max_output_tokens: CAP }, [`${main}-plain`]: { kind: 'llm', capabilities: ['vision'] } };
}
const trio = (main: string) => ({ main, capped: `${main}-capped`, plain: `${main}-plain` });

const bearer = (h: IncomingMessage['headers']) => (typeof h.authorization === 'string' ? h.authorization.replace(/^Bearer /, '') : undefined);
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

// ------------------------------------------------------------------------------------------------ OpenAI Chat

const OPENAI_KEY = 'sk-upstream-secret-123';
function openaiBehaviour(s: Scenario): OpenAIBehaviour {
  switch (s.kind) {
    case 'text': return { kind: 'ok', words: WORDS, ...(s.delayMs ? { delayMs: s.delayMs } : {}) };
    case 'tools': return { kind: 'tool', name: TOOL_NAME, args: s.args[0]!, more: s.args.slice(1) as Json[] };
    case 'error': return { kind: 'error', status: s.status, body: { error: { message: s.message, type: 'conformance', param: null, code: null } }, ...(s.headers ? { headers: s.headers } : {}) };
    case 'cut': return { kind: 'cut', chunks: 1 };
    case 'stall': return { kind: 'stall', chunks: 1 };
    case 'stream-error': return { kind: 'stream-error', chunks: 1 };
    case 'thinking': return { kind: 'reasoning', words: WORDS };
  }
}

const openai: ProviderUnderTest = {
  id: 'oai',
  format: 'openai',
  inProcess: false,
  models: trio('gpt-4o'),
  async start(t) {
    const up = await startFakeOpenAI(t);
    return {
      row: () => fakeProvider(up.baseUrl, { ...HEADERS('oai'), ...TIMEOUTS, models: models('gpt-4o', undefined) }),
      script: (s) => up.next(openaiBehaviour(s)),
      received: up.received,
      get aborted() { return up.aborted; },
      extraRows: () => ({}),
      delayed: () => (up.next(openaiBehaviour({ kind: 'text', delayMs: 2000 })), 'oai/gpt-4o'),
      stalling: () => (up.next(openaiBehaviour({ kind: 'stall' })), 'oai/gpt-4o'),
    };
  },
  rowAt: (origin, extra = {}) => fakeProvider(`${origin}/v1`, { ...TIMEOUTS, models: models('gpt-4o', undefined), ...extra }),
  text: TEXT,
  usage: [OPENAI_USAGE.prompt_tokens - 3, 3, null, OPENAI_USAGE.completion_tokens - 2, 2],
  price: { input: 2.5, output: 10, cached: 1.25 },
  wirePath: () => '/v1/chat/completions',
  keyOf: bearer,
  key: OPENAI_KEY,
  maxTokensOf: (b) => b.max_completion_tokens ?? b.max_tokens,
  thinkingOf: (b) => b.reasoning_effort,
  thinkingHigh: 'high',
  clampShows: 'wire',
  toolFields: ['tools', 'tool_choice', 'parallel_tool_calls'],
  cutUsage: 'estimated',
  family: null,
  opaqueMark: null,
  countTokens: null,
  unsupported: {},
};

// ------------------------------------------------------------------------------------------------ Responses

const RESP_KEY = 'sk-resp-upstream-secret';
function respBehaviour(s: Scenario): RespBehaviour {
  // Events of the text answer: created, in_progress, output_item.added, content_part.added, then the deltas (5..).
  switch (s.kind) {
    case 'text': return { kind: 'ok', words: WORDS, ...(s.delayMs ? { delayMs: s.delayMs } : {}) };
    case 'tools': return { kind: 'tool', name: TOOL_NAME, arguments: JSON.stringify(s.args[0]), more: s.args.slice(1).map((a) => JSON.stringify(a)) };
    case 'error': return { kind: 'error', status: s.status, body: { error: { message: s.message, type: 'conformance', param: null, code: null } }, ...(s.headers ? { headers: s.headers } : {}) };
    case 'cut': return { kind: 'cut', events: 5 };
    case 'stall': return { kind: 'stall', events: 5 };
    case 'stream-error': return { kind: 'stream-error', events: 5 };
    case 'thinking': return { kind: 'reasoning', words: WORDS };
  }
}

const responses: ProviderUnderTest = {
  id: 'resp',
  format: 'openai-responses',
  inProcess: false,
  models: trio('o4-mini'),
  async start(t) {
    const up = await startFakeResponses(t);
    return {
      row: () => respProvider(up.baseUrl, { ...HEADERS('resp'), ...TIMEOUTS, models: models('o4-mini', 'openai') }),
      script: (s) => up.next(respBehaviour(s)),
      received: up.received,
      get aborted() { return up.aborted; },
      extraRows: () => ({}),
      delayed: () => (up.next(respBehaviour({ kind: 'text', delayMs: 2000 })), 'resp/o4-mini'),
      stalling: () => (up.next(respBehaviour({ kind: 'stall' })), 'resp/o4-mini'),
    };
  },
  rowAt: (origin, extra = {}) => respProvider(`${origin}/v1`, { ...TIMEOUTS, models: models('o4-mini', 'openai'), ...extra }),
  text: TEXT,
  usage: [RESP_USAGE.input_tokens - RESP_USAGE.cached_tokens, RESP_USAGE.cached_tokens, null, RESP_USAGE.output_tokens - RESP_USAGE.reasoning_tokens, RESP_USAGE.reasoning_tokens],
  price: { input: 2, output: 8, cached: 0.5 },
  wirePath: () => '/v1/responses',
  keyOf: bearer,
  key: RESP_KEY,
  maxTokensOf: (b) => b.max_output_tokens,
  thinkingOf: (b) => (b.reasoning as Json | undefined)?.effort,
  thinkingHigh: 'high',
  clampShows: 'wire',
  toolFields: ['tools', 'tool_choice', 'parallel_tool_calls'],
  cutUsage: 'estimated',
  family: 'openai-responses',
  opaqueMark: 'gAAAAAB-fake-encrypted',
  countTokens: null,
  unsupported: {},
};

// ------------------------------------------------------------------------------------------------ Anthropic

const ANTH_KEY = 'sk-ant-fake-upstream-key-123';
function anthBehaviour(s: Scenario): AnthropicBehaviour {
  // Events of the text answer: message_start, content_block_start, ping, then the text deltas (4..).
  switch (s.kind) {
    case 'text': return { kind: 'ok', text: WORDS, ...(s.delayMs ? { delayMs: s.delayMs } : {}) };
    case 'tools': return { kind: 'tool_use', name: TOOL_NAME, preamble: '', input: s.args[0]!, more: s.args.slice(1) as Json[] };
    case 'error': return { kind: 'error', status: s.status, message: s.message, ...(s.headers ? { headers: s.headers } : {}) };
    case 'cut': return { kind: 'cut', events: 4 };
    case 'stall': return { kind: 'stall', events: 4 };
    case 'stream-error': return { kind: 'stream_error', events: 4 };
    case 'thinking': return { kind: 'thinking', text: WORDS };
  }
}

const anthropic: ProviderUnderTest = {
  id: 'anth',
  format: 'anthropic',
  inProcess: false,
  models: trio('claude-sonnet-4-5'),
  async start(t) {
    const up = await startFakeAnthropic(t);
    return {
      row: () => fakeAnthropicProvider(up.url, { ...HEADERS('anth'), ...TIMEOUTS, models: models('claude-sonnet-4-5', 'anthropic-budget') }),
      script: (s) => up.next(anthBehaviour(s)),
      received: up.received,
      get aborted() { return up.aborted; },
      extraRows: () => ({}),
      delayed: () => (up.next(anthBehaviour({ kind: 'text', delayMs: 2000 })), 'anth/claude-sonnet-4-5'),
      stalling: () => (up.next(anthBehaviour({ kind: 'stall' })), 'anth/claude-sonnet-4-5'),
    };
  },
  rowAt: (origin, extra = {}) => fakeAnthropicProvider(origin, { ...TIMEOUTS, models: models('claude-sonnet-4-5', 'anthropic-budget'), ...extra }),
  text: TEXT,
  usage: [ANTH_USAGE.input_tokens, ANTH_USAGE.cache_read_input_tokens, ANTH_USAGE.cache_creation_input_tokens, ANTH_USAGE.output_tokens, null],
  price: { input: 3, output: 15, cached: 0.3, cache_write: 3.75 },
  wirePath: () => '/v1/messages',
  keyOf: (h) => str(h['x-api-key']),
  key: ANTH_KEY,
  maxTokensOf: (b) => b.max_tokens,
  thinkingOf: (b) => b.thinking,
  // anthropic-budget, high: 24576, below the max_tokens the codec sends (checked by the case).
  thinkingHigh: { type: 'enabled', budget_tokens: 24576 },
  clampShows: 'wire',
  toolFields: ['tools', 'tool_choice'],
  cutUsage: 'estimated',
  family: 'anthropic',
  opaqueMark: 'fakeSignatureForTestsOnly',
  countTokens: 'anthropic',
  unsupported: {},
};

// ------------------------------------------------------------------------------------------------ Gemini

const GEM_KEY = 'AIzaSy-fake-upstream-key-0123456789';
function gemBehaviour(s: Scenario): GeminiBehaviour {
  switch (s.kind) {
    case 'text': return { kind: 'ok', words: WORDS, ...(s.delayMs ? { delayMs: s.delayMs } : {}) };
    case 'tools': return { kind: 'call', name: TOOL_NAME, args: s.args[0]!, more: s.args.slice(1) as Json[] };
    case 'error': return { kind: 'error', status: s.status, message: s.message, ...(s.headers ? { headers: s.headers } : {}) };
    case 'cut': return { kind: 'cut', chunks: 1 };
    case 'stall': return { kind: 'stall', chunks: 1 };
    case 'stream-error': return { kind: 'stream-error', chunks: 1 };
    case 'thinking': return { kind: 'thought', words: WORDS };
  }
}

const gemini: ProviderUnderTest = {
  id: 'gem',
  format: 'gemini',
  inProcess: false,
  models: trio('gemini-2.5-flash'),
  async start(t) {
    const up = await startFakeGemini(t);
    return {
      row: () => geminiProvider(up, { ...HEADERS('gem'), ...TIMEOUTS, models: models('gemini-2.5-flash', 'gemini-budget') }),
      script: (s) => up.next(gemBehaviour(s)),
      received: up.received,
      get aborted() { return up.aborted; },
      extraRows: () => ({}),
      delayed: () => (up.next(gemBehaviour({ kind: 'text', delayMs: 2000 })), 'gem/gemini-2.5-flash'),
      stalling: () => (up.next(gemBehaviour({ kind: 'stall' })), 'gem/gemini-2.5-flash'),
    };
  },
  rowAt: (origin, extra = {}) => geminiProvider({ baseUrl: `${origin}/v1beta`, key: GEM_KEY }, { ...TIMEOUTS, models: models('gemini-2.5-flash', 'gemini-budget'), ...extra }),
  text: TEXT,
  usage: [GEM_USAGE.promptTokenCount - GEM_USAGE.cachedContentTokenCount!, GEM_USAGE.cachedContentTokenCount!, null, GEM_USAGE.candidatesTokenCount, GEM_USAGE.thoughtsTokenCount!],
  price: { input: 2, output: 12, cached: 0.5 },
  wirePath: (model, stream) => `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
  keyOf: (h) => str(h['x-goog-api-key']),
  key: GEM_KEY,
  maxTokensOf: (b) => (b.generationConfig as Json | undefined)?.maxOutputTokens,
  thinkingOf: (b) => ((b.generationConfig as Json | undefined)?.thinkingConfig as Json | undefined)?.thinkingBudget,
  thinkingHigh: 24576,
  clampShows: 'wire',
  toolFields: ['tools', 'toolConfig'],
  // Every Gemini chunk repeats the cumulative usage, so the first chunk already reported both sides.
  cutUsage: 'reported',
  family: 'gemini',
  opaqueMark: 'CiQBVKhc7vB0fake',
  countTokens: 'gemini',
  unsupported: {},
};

// ------------------------------------------------------------------------------------------------ mock

const IN_PROCESS = 'in-process transport: no wire request to observe';
const NO_FAULTS = 'the built-in mock has no fault injection: it always answers in full';
const NO_SOCKET = 'in-process transport: no socket to refuse, time out or stall';
/** The mock's fixed answer: 5 words, 10 input tokens, each word one output token. */
export const MOCK = { chunks: 5, input_tokens: 10 };

const mock: ProviderUnderTest = {
  id: 'mock',
  format: 'mock',
  inProcess: true,
  models: trio('echo-1'),
  async start() {
    const row = (mockOpts: Json) => ({
      name: 'Mock', group: 'paid', format: 'mock', price: { input: 1, output: 2, cached: 0.5 },
      mock: { ...MOCK, latency_ms: 0, chunk_delay_ms: 0, ...mockOpts },
      models: { ...models('echo-1', undefined), 'echo-1-capped': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], max_output_tokens: 3 } },
    });
    return {
      row: () => row({}),
      script: (s) => {
        if (s.kind !== 'text') throw new Error(`mock: no scenario '${s.kind}'`);
      },
      received: [],
      aborted: 0,
      // A second mock row whose answer starts after 2 s and whose words come 500 ms apart.
      extraRows: () => ({ mockslow: row({ latency_ms: 2000, chunk_delay_ms: 0 }), mockdrip: row({ latency_ms: 0, chunk_delay_ms: 500 }) }),
      delayed: () => 'mockslow/echo-1',
      stalling: () => 'mockdrip/echo-1',
    };
  },
  rowAt: () => {
    throw new Error('mock: no origin');
  },
  text: 'Tollgate demo reply: every token',
  usage: [MOCK.input_tokens, 0, null, MOCK.chunks, 0],
  price: { input: 1, output: 2, cached: 0.5 },
  wirePath: () => '',
  keyOf: () => undefined,
  key: '',
  maxTokensOf: () => undefined,
  thinkingOf: () => undefined,
  thinkingHigh: undefined,
  clampShows: 'answer',
  toolFields: [],
  cutUsage: 'estimated',
  family: null,
  opaqueMark: null,
  countTokens: null,
  unsupported: {
    'request-shape': IN_PROCESS,
    prefix: IN_PROCESS,
    thinking: IN_PROCESS,
    capabilities: IN_PROCESS,
    'parallel-tools': 'the built-in mock answers text only, never a tool call',
    truncated: NO_FAULTS,
    'stream-error': NO_FAULTS,
    'not-json': NO_FAULTS,
    'status-table': NO_FAULTS,
    refused: NO_SOCKET,
    'connect-timeout': NO_SOCKET,
    'headers-timeout': NO_SOCKET,
    stall: NO_SOCKET,
    'opaque-reasoning': IN_PROCESS,
    'client-tool': 'the built-in mock answers text only, never a tool call',
  },
};

export const PROVIDERS: readonly ProviderUnderTest[] = [openai, responses, anthropic, gemini, mock];

/** The cost of `usage` at `price` (USD per 1M tokens; a bucket without its own price falls back as in recording.md). */
export function costOf(usage: Buckets, price: Price): number {
  const [input, cached, cacheWrite, output, reasoning] = usage.map((v) => v ?? 0) as number[];
  return (input! * price.input + cached! * (price.cached ?? price.input) + cacheWrite! * (price.cache_write ?? price.input)
    + output! * price.output + reasoning! * (price.reasoning ?? price.output)) / 1e6;
}

export const totalOf = (usage: Buckets): number => usage.reduce<number>((a, v) => a + (v ?? 0), 0);
