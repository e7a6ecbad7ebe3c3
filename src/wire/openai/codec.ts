// The `openai` wire format as a pure WireCodec: OpenAI Chat Completions <-> the canonical model (issue 3), for
// clients that speak it (inbound) and for every OpenAI-compatible upstream (outbound). The running pipeline still
// uses the passthrough adapter in index.ts; this codec is for translated traffic.
//
// Requests: chat-request.ts (parse), chat-build.ts (build); whole answers: chat-response.ts; streams: chat-stream.ts.

import type { WireCodec } from '../codec.js';
import { buildChatRequest } from './chat-build.js';
import { parseChatRequest } from './chat-request.js';
import { parseChatResponse, renderChatResponse } from './chat-response.js';
import { createOpenAIChatRenderer, OpenAIChatStreamParser } from './chat-stream.js';

export { buildChatRequest } from './chat-build.js';
export { parseChatRequest } from './chat-request.js';
export { parseChatResponse, renderChatResponse, renderUsage } from './chat-response.js';
export { createOpenAIChatRenderer, OpenAIChatStreamParser, type OpenAIChatRendererOptions } from './chat-stream.js';

/** Whether a Chat Completions body asks for the usage chunk at the end of a stream (stream_options.include_usage). */
export function chatIncludeUsage(body: unknown): boolean {
  const so = (body as { stream_options?: { include_usage?: unknown } | null } | null)?.stream_options;
  return so?.include_usage === true;
}

/** Canonical fields under a Chat Completions client's names. */
export const CHAT_PARAM_NAMES: WireCodec['paramNames'] = {
  maxTokens: 'max_completion_tokens', temperature: 'temperature', topP: 'top_p', topK: 'top_k', stop: 'stop', seed: 'seed',
  presencePenalty: 'presence_penalty', frequencyPenalty: 'frequency_penalty', logitBias: 'logit_bias', logprobs: 'logprobs',
  topLogprobs: 'top_logprobs', n: 'n', responseFormat: 'response_format', thinking: 'reasoning_effort', tools: 'tools', toolChoice: 'tool_choice',
  parallelToolCalls: 'parallel_tool_calls', webSearch: 'web_search_options', cacheControl: 'cache_control', promptCacheKey: 'prompt_cache_key',
  serviceTier: 'service_tier', user: 'user', metadata: 'metadata', prediction: 'prediction', image: 'image_url', file: 'file', audio: 'input_audio',
  toolError: 'messages.is_error', toolStrict: 'tools.function.strict', imageDetail: 'messages.content.image_url.detail', toolGrammar: 'tools.custom.format',
};

export const openaiCodec: WireCodec = {
  format: 'openai',
  paramNames: CHAT_PARAM_NAMES,
  parseRequest: parseChatRequest,
  renderResponse: (res, model) => renderChatResponse(res, model),
  // The WireCodec signature carries no include_usage: no usage chunk. Callers that know the client's
  // stream_options use createOpenAIChatRenderer(model, { includeUsage: chatIncludeUsage(body) }).
  createStreamRenderer: (model) => createOpenAIChatRenderer(model, { includeUsage: false }),
  buildRequest: buildChatRequest,
  parseResponse: parseChatResponse,
  createStreamParser: () => new OpenAIChatStreamParser(),
};
