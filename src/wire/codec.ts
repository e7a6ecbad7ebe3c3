// The one small interface every wire format implements (issue 3), in both directions:
//   inbound  (a client speaks the format):   parseRequest -> CanonicalRequest; CanonicalResponse/Events -> render
//   outbound (a provider speaks the format): CanonicalRequest -> buildRequest; upstream answer -> parse
// Codecs are pure: no I/O, no clock, no randomness (ids come from the canonical objects or from `ids`).

import type { ModelConfig, ProviderConfig } from '../config/types.js';
import type { SseFrame } from './sse.js';
import type { CanonicalEvent, CanonicalField, CanonicalRequest, CanonicalResponse } from './canonical.js';
import type { Refusal } from './fields.js';
import type { UpstreamRequest } from './types.js';

export type CodecFormat = 'openai' | 'openai-responses' | 'anthropic' | 'gemini';

/** Where an outbound request goes: the provider row, the model id sent upstream, and the model's config if listed. */
export interface Target {
  readonly providerId: string;
  readonly provider: ProviderConfig;
  readonly modelId: string;
  readonly model: ModelConfig | null;
}

/** An upstream request and what building it left out (src/wire/fields.ts). */
export interface BuiltRequest extends UpstreamRequest {
  /** Fields the request set that this request does not carry (listed to the client under its own names). */
  readonly dropped: readonly CanonicalField[];
  /** Set when the request must not be sent: the client gets a 400 naming the field. */
  readonly refused?: Refusal;
  /**
   * A tool the build added to get a structured answer (a response format sent as a forced tool): a call to it is
   * the answer's text, not a tool call (src/wire/answer-tool.ts).
   */
  readonly answerTool?: string;
}

/** Turns upstream SSE frames into canonical events. Stateful (block indexes, tool-call assembly): one per stream. */
export interface StreamParser {
  frame(f: SseFrame): CanonicalEvent[];
  /** The upstream's stream ended; returns any events still owed (never invents a finish or usage). */
  end(): CanonicalEvent[];
  /** True once the format's own terminal event was seen (`[DONE]`, `message_stop`, `response.completed`, ...). */
  readonly terminated: boolean;
}

/** Turns canonical events into the client's SSE text. Stateful: one per stream. */
export interface StreamRenderer {
  /** SSE text for one event ('' when the format has nothing to say for it). */
  event(e: CanonicalEvent): string;
  /** The format's normal end of stream (e.g. `data: [DONE]`), after a finish event. */
  end(): string;
  /** The format's terminal error event(s), for a stream that cannot finish normally. */
  error(code: string, message: string): string;
}

export interface WireCodec {
  readonly format: CodecFormat;
  /** Each canonical field under the name a client of this format gives it (for the dropped-parameters list and 400s). */
  readonly paramNames: Readonly<Record<CanonicalField, string>>;

  // inbound
  /**
   * Parse a client request body. A `(level)` suffix on the body's model is removed and becomes `thinking` (it wins
   * over the format's own reasoning parameter); a format whose model is in the URL (Gemini) returns model ''.
   * Throws TollgateError('TOLLGATE_ERR_INVALID_REQUEST', ..., { param }) when malformed.
   */
  parseRequest(body: unknown): CanonicalRequest;
  /** The client-facing JSON for a whole answer. `model` is the name the client asked for. */
  renderResponse(res: CanonicalResponse, model: string): unknown;
  createStreamRenderer(model: string): StreamRenderer;

  // outbound
  buildRequest(req: CanonicalRequest, target: Target): BuiltRequest;
  /** Parse a whole (non-streamed) upstream answer. */
  parseResponse(json: unknown): CanonicalResponse;
  createStreamParser(): StreamParser;
}
