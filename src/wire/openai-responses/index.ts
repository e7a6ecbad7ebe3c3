// The `openai-responses` wire format: OpenAI's Responses API (`POST /v1/responses`), as the `openai` SDK v6
// (`client.responses.create` / `.stream`) sends and reads it. A pure WireCodec (no I/O, no clock, no randomness):
//
//   request.ts        client body -> CanonicalRequest (stateful features rejected: previous_response_id, ...)
//   build.ts          CanonicalRequest -> upstream request (store: false, thinking -> reasoning.effort, ...)
//   response.ts       whole answers, both directions
//   stream.ts         upstream SSE -> canonical events (terminal events, usage counted once)
//   render-stream.ts  canonical events -> client SSE (response.completed in end(); response.failed + [DONE] on error)
//   usage.ts          input_tokens / output_tokens with their details <-> the five usage buckets
//   shared.ts         JSON guards, data URLs, the encrypted-reasoning envelope, ids
//
// Each file's header documents its decisions.

import type { WireCodec } from '../codec.js';
import { buildRequest } from './build.js';
import { ResponsesStreamRenderer } from './render-stream.js';
import { parseRequest } from './request.js';
import { parseResponse, renderResponse } from './response.js';
import { ResponsesStreamParser } from './stream.js';

/** Canonical fields under a Responses client's names. */
export const RESPONSES_PARAM_NAMES: WireCodec['paramNames'] = {
  maxTokens: 'max_output_tokens', temperature: 'temperature', topP: 'top_p', topK: 'top_k', stop: 'stop', seed: 'seed',
  presencePenalty: 'presence_penalty', frequencyPenalty: 'frequency_penalty', logitBias: 'logit_bias', logprobs: 'include.message.output_text.logprobs',
  topLogprobs: 'top_logprobs', n: 'n', responseFormat: 'text.format', thinking: 'reasoning', tools: 'tools', toolChoice: 'tool_choice',
  parallelToolCalls: 'parallel_tool_calls', webSearch: 'tools.web_search', cacheControl: 'cache_control', promptCacheKey: 'prompt_cache_key',
  serviceTier: 'service_tier', user: 'user', metadata: 'metadata', prediction: 'prediction', image: 'input_image', file: 'input_file', audio: 'input_audio',
  toolError: 'input.is_error', toolStrict: 'tools.strict', imageDetail: 'input.content.detail', toolGrammar: 'tools.custom.format',
};

export const responsesCodec: WireCodec = {
  format: 'openai-responses',
  paramNames: RESPONSES_PARAM_NAMES,
  parseRequest,
  renderResponse,
  createStreamRenderer: (model) => new ResponsesStreamRenderer(model),
  buildRequest,
  parseResponse,
  createStreamParser: () => new ResponsesStreamParser(),
};

export { renderUsage, responsesUsage } from './usage.js';
