// The canonical model every wire format translates to and from (issue 3). Pure data: no I/O, no format names.
// A client request in any format is parsed into a CanonicalRequest; an outbound adapter builds the upstream
// request from it; the upstream answer is parsed into a CanonicalResponse (or a stream of CanonicalEvents); the
// client's codec renders that back in the client's format. Same-format traffic may skip the round trip.
//
// Rules every codec follows:
// - Nothing is invented: a field the source did not carry stays undefined (usage buckets stay null).
// - Tool-call arguments travel as the JSON text the model produced (`arguments`), never re-serialised, so a
//   partial or odd JSON string survives a translation unchanged.
// - Opaque provider data that must round-trip (thinking signatures, redacted thinking, Gemini thought signatures,
//   Responses reasoning ids/encrypted content) travels in `signature` / `opaque` and is only sent back to the same
//   format family; another family drops it.

import type { Usage } from '../ledger/types.js';

/** The wire-format family that produced opaque data (signatures, encrypted reasoning); only it may receive it back. */
export type Origin = 'openai' | 'openai-responses' | 'anthropic' | 'gemini';

export type MediaSource =
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'base64'; readonly mediaType: string; readonly data: string }
  /**
   * A provider-side file id (OpenAI file_id, Anthropic file_id, Gemini fileUri), tagged with the family whose files
   * API holds it: only that family can read it (OpenAI Chat and Responses share one).
   */
  | { readonly kind: 'file_id'; readonly id: string; readonly mediaType?: string; readonly origin?: Origin };

/** A prompt-cache breakpoint (Anthropic's `cache_control`): the prefix up to this part or tool may be cached. */
export interface CacheControl {
  readonly type: 'ephemeral';
  readonly ttl?: '5m' | '1h';
}

export type Part =
  | { readonly type: 'text'; readonly text: string; readonly cacheControl?: CacheControl }
  | { readonly type: 'image'; readonly source: MediaSource; readonly detail?: 'low' | 'high' | 'auto'; readonly cacheControl?: CacheControl }
  /** A document (PDF or other file) given to the model. */
  | { readonly type: 'file'; readonly source: MediaSource; readonly filename?: string; readonly cacheControl?: CacheControl }
  | { readonly type: 'audio'; readonly source: MediaSource }
  /** The model's reasoning. `signature` / `opaque` round-trip to the same family (`origin`) only. */
  | {
      readonly type: 'reasoning'; readonly text: string; readonly signature?: string; readonly opaque?: string; readonly redacted?: boolean;
      readonly origin?: Origin;
    }
  /**
   * A call the model made. `arguments` is JSON text. `signature`: Gemini's thought signature on the call part.
   * `custom`: a call of an OpenAI custom tool (ToolDefinition.custom), its arguments `{"input": "<the text>"}`.
   */
  | {
      readonly type: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: string; readonly signature?: string; readonly origin?: Origin;
      readonly cacheControl?: CacheControl; readonly custom?: boolean;
    }
  /** The result the client sends back for a call. */
  | {
      readonly type: 'tool_result'; readonly callId: string; readonly name?: string; readonly content: readonly Part[]; readonly isError?: boolean;
      readonly cacheControl?: CacheControl;
    };

export type Role = 'user' | 'assistant';

export interface Message {
  readonly role: Role;
  readonly content: readonly Part[];
}

export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly strict?: boolean;
  readonly cacheControl?: CacheControl;
  /**
   * An OpenAI custom (freeform) tool: its input is one string. `parameters` is the function form it takes elsewhere
   * (one required string `input`, src/wire/custom-tool.ts); `grammar` constrains the input where OpenAI carries it.
   */
  readonly custom?: { readonly grammar?: CustomGrammar };
}

/** The grammar of a custom tool's input (OpenAI's `format` of type grammar). */
export interface CustomGrammar {
  readonly syntax: 'lark' | 'regex';
  readonly definition: string;
}

/**
 * A tool the provider runs itself, in the formats that have an equivalent: web search is Responses `web_search`,
 * Anthropic's `web_search_20250305` server tool and Gemini's `googleSearch`.
 */
export interface BuiltinTool {
  readonly type: 'web_search';
}

export type ToolChoice =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  /** The model must call some tool. */
  | { readonly type: 'required' }
  | { readonly type: 'tool'; readonly name: string }
  /** The model must use this built-in tool. */
  | { readonly type: 'builtin'; readonly tool: BuiltinTool['type'] };

export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly name: string; readonly schema: Readonly<Record<string, unknown>>; readonly strict?: boolean };

/** The thinking level of spec item 8: a named level or a token budget. */
export type ThinkingLevel =
  | { readonly kind: 'level'; readonly level: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | 'auto' }
  | { readonly kind: 'budget'; readonly tokens: number };

/**
 * The request fields a target may be unable to carry. A codec's build reports the ones it dropped (or refused) by
 * these names; the client's codec names each in its own format (`WireCodec.paramNames`) for the
 * `x-tollgate-dropped-params` header.
 */
export type CanonicalField =
  | 'maxTokens' | 'temperature' | 'topP' | 'topK' | 'stop' | 'seed' | 'presencePenalty' | 'frequencyPenalty' | 'logitBias'
  | 'logprobs' | 'topLogprobs' | 'n' | 'responseFormat' | 'thinking' | 'tools' | 'toolChoice' | 'parallelToolCalls'
  | 'webSearch' | 'cacheControl' | 'promptCacheKey' | 'serviceTier' | 'user' | 'metadata' | 'prediction' | 'image' | 'file' | 'audio'
  /** A tool result's error flag, a tool's strict schema mode, an image's detail level (low / high). */
  | 'toolError' | 'toolStrict' | 'imageDetail'
  /** A custom tool's grammar (its input format), which only OpenAI enforces. */
  | 'toolGrammar';

export interface CanonicalRequest {
  /** The model as the client named it, thinking suffix removed. */
  readonly model: string;
  /** System / developer instructions, in order. */
  readonly system: readonly Part[];
  readonly messages: readonly Message[];
  readonly tools?: readonly ToolDefinition[];
  readonly toolChoice?: ToolChoice;
  readonly parallelToolCalls?: boolean;
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
  readonly responseFormat?: ResponseFormat;
  /** From the `(level)` suffix, or the client's own reasoning parameter. */
  readonly thinking?: ThinkingLevel;
  /** Ask for reasoning summaries/text in the answer where the format can return them. */
  readonly includeReasoning?: boolean;
  readonly stream: boolean;
  /** End-user id / metadata the client sent (forwarded where the target has a place for it). */
  readonly user?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** Provider-run tools (web search) the client enabled. */
  readonly builtinTools?: readonly BuiltinTool[];
  /** How many alternative answers to generate (Chat `n`, Gemini `candidateCount`); absent = 1. */
  readonly n?: number;
  /** Return the log probability of each output token, and of the `topLogprobs` most likely tokens at each position. */
  readonly logprobs?: boolean;
  readonly topLogprobs?: number;
  /** Token id -> bias (Chat `logit_bias`). */
  readonly logitBias?: Readonly<Record<string, number>>;
  /** Predicted output text (Chat `prediction` of type content). */
  readonly prediction?: string;
  /** The provider's prompt-cache routing key (OpenAI `prompt_cache_key`). */
  readonly promptCacheKey?: string;
  /** The processing tier asked for, in OpenAI's vocabulary (`auto`, `default`, `flex`, `priority`, ...), or Anthropic's `standard_only`. */
  readonly serviceTier?: string;
  /**
   * Parameters the client sent that the canonical model has no place for, named as the client's format names them.
   * They are listed in the `x-tollgate-dropped-params` header, never dropped silently.
   */
  readonly unmapped?: readonly string[];
  /** Fields removed on the way to a target (capability stripping, a fusion panel), listed like the target's drops. */
  readonly removed?: readonly CanonicalField[];
  /**
   * The client's own name for a field, where it is not the one its codec names the field by (`WireCodec.paramNames`):
   * a Gemini client's `generationConfig.responseSchema` rather than `responseJsonSchema`.
   */
  readonly fieldNames?: Readonly<Partial<Record<CanonicalField, string>>>;
}

export type StopReason = 'end' | 'max_tokens' | 'tool_calls' | 'stop_sequence' | 'content_filter' | 'refusal' | 'error';

/** One output token's log probability and, when asked, the most likely alternatives at its position. */
export interface TokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes?: readonly number[];
  readonly top: readonly { readonly token: string; readonly logprob: number; readonly bytes?: readonly number[] }[];
}

/** An alternative answer (n > 1): the second and later choices / candidates. */
export interface CanonicalChoice {
  readonly content: readonly Part[];
  readonly stopReason: StopReason;
  readonly stopSequence?: string;
  readonly logprobs?: readonly TokenLogprob[];
}

export interface CanonicalResponse {
  readonly id: string;
  readonly model: string;
  /** Text, reasoning and tool_call parts, in the order the model produced them. */
  readonly content: readonly Part[];
  readonly stopReason: StopReason;
  /** The stop sequence that ended the answer, when one did and the provider says which. */
  readonly stopSequence?: string;
  /** null: the provider reported no usage. */
  readonly usage: Usage | null;
  /** The log probabilities of the answer's text tokens, when the request asked for them and the provider gave them. */
  readonly logprobs?: readonly TokenLogprob[];
  /** The second and later answers, when the request asked for n > 1. */
  readonly moreChoices?: readonly CanonicalChoice[];
}

/**
 * One streamed event. `index` numbers the content blocks of the answer in order (0, 1, ...): a text block, a
 * reasoning block or a tool call each get their own index, opened by a *_start event and closed by block_stop.
 */
export type CanonicalEvent =
  | { readonly type: 'start'; readonly id: string; readonly model: string }
  | { readonly type: 'text_start'; readonly index: number }
  | { readonly type: 'text_delta'; readonly index: number; readonly text: string }
  | { readonly type: 'reasoning_start'; readonly index: number }
  | { readonly type: 'reasoning_delta'; readonly index: number; readonly text: string }
  /** Opaque reasoning data of the family `origin`; a client of another family never receives it. */
  | { readonly type: 'reasoning_signature'; readonly index: number; readonly signature: string; readonly origin?: Origin }
  /** `signature`/`origin`: opaque data the producing family attached to the call (Gemini's thought signature). */
  /** `custom`: a call of a custom tool (its arguments are `{"input": ...}`, as on the tool_call part). */
  | {
      readonly type: 'tool_call_start'; readonly index: number; readonly id: string; readonly name: string; readonly signature?: string; readonly origin?: Origin;
      readonly custom?: boolean;
    }
  /** `signature`/`origin`: the call's opaque data, when it came after the call started (a Chat upstream's later fragment). */
  | { readonly type: 'tool_call_delta'; readonly index: number; readonly arguments: string; readonly signature?: string; readonly origin?: Origin }
  | { readonly type: 'block_stop'; readonly index: number }
  /** Usage as reported so far; a later usage event replaces an earlier one (never added to it). */
  | { readonly type: 'usage'; readonly usage: Usage }
  | { readonly type: 'finish'; readonly stopReason: StopReason; readonly stopSequence?: string }
  /** The upstream reported an error inside the stream. */
  | { readonly type: 'error'; readonly message: string; readonly code?: string };
