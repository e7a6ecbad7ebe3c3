// The `anthropic` wire format: Anthropic's Messages API (POST /v1/messages), in both directions, as a pure codec.
// request.ts: client body <-> canonical request, canonical request -> upstream request; response.ts: whole answers;
// stream.ts: SSE parser and renderer; usage.ts: the usage buckets; content.ts: content blocks <-> parts.

import type { WireCodec } from '../codec.js';
import { buildRequest, parseRequest } from './request.js';
import { parseResponse, renderResponse } from './response.js';
import { AnthropicStreamParser, AnthropicStreamRenderer } from './stream.js';

/** Canonical fields under an Anthropic client's names. */
export const ANTHROPIC_PARAM_NAMES: WireCodec['paramNames'] = {
  maxTokens: 'max_tokens', temperature: 'temperature', topP: 'top_p', topK: 'top_k', stop: 'stop_sequences', seed: 'seed',
  presencePenalty: 'presence_penalty', frequencyPenalty: 'frequency_penalty', logitBias: 'logit_bias', logprobs: 'logprobs',
  topLogprobs: 'top_logprobs', n: 'n', responseFormat: 'output_config.format', thinking: 'thinking', tools: 'tools', toolChoice: 'tool_choice',
  parallelToolCalls: 'tool_choice.disable_parallel_tool_use', webSearch: 'tools.web_search', cacheControl: 'cache_control',
  promptCacheKey: 'prompt_cache_key', serviceTier: 'service_tier', user: 'metadata.user_id', metadata: 'metadata', prediction: 'prediction',
  image: 'image', file: 'document', audio: 'audio',
  toolError: 'messages.content.is_error', toolStrict: 'tools.strict', imageDetail: 'image.detail', toolGrammar: 'tools.custom.format',
};

export const anthropicCodec: WireCodec = {
  format: 'anthropic',
  paramNames: ANTHROPIC_PARAM_NAMES,
  parseRequest,
  renderResponse,
  createStreamRenderer: (model) => new AnthropicStreamRenderer(model),
  buildRequest,
  parseResponse,
  createStreamParser: () => new AnthropicStreamParser(),
};
