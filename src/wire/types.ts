// The small interface every outbound wire format implements. An adapter is pure: it shapes the upstream request
// and reads usage out of responses; the pipeline owns I/O.

import type { ProviderConfig } from '../config/types.js';
import type { AnswerText } from './estimate.js';
import type { Usage } from '../ledger/types.js';

/** A chat request as the client sent it (OpenAI Chat Completions shape), already parsed. */
export type ChatBody = Record<string, unknown> & { model: string; messages: unknown[]; stream?: boolean };

export interface UpstreamRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  /**
   * The JSON body as a value, not text: the transport serialises it as it sends (src/wire/json-stream.ts,
   * bytes identical to JSON.stringify), so a large body is never one more whole string and Buffer on top of it.
   */
  readonly body: Record<string, unknown>;
}

export interface StreamChunkInfo {
  /** Usage reported by this chunk, if any. */
  readonly usage: Usage | null;
  /** Number of content, reasoning or tool-call deltas in this chunk (the first one marks the time to first token). */
  readonly deltas: number;
  /** The text this chunk adds to the answer (content, tool-call names and arguments), '' if none. */
  readonly output: string;
  /** The reasoning text this chunk adds, '' if none. */
  readonly reasoning: string;
  /** True when the chunk carries nothing for the client but usage (OpenAI's final include_usage chunk). */
  readonly usageOnly: boolean;
}

export interface ChatAdapter {
  /** Build the upstream request for `modelId`. `askUsage`: ask a stream to report usage. */
  chatRequest(provider: ProviderConfig, modelId: string, body: ChatBody, askUsage: boolean): UpstreamRequest;
  /** Usage from a non-streamed response body. */
  usageFromResponse(json: unknown): Usage | null;
  /** The text of a non-streamed response body (to estimate its output when it reports no usage). */
  answerText(json: unknown): AnswerText;
  /** What one parsed stream chunk carries. */
  inspectChunk(json: unknown): StreamChunkInfo;
}
