// The `gemini` wire format: the Gemini API (generativelanguage v1beta) `generateContent` and
// `streamGenerateContent?alt=sse`, camelCase JSON as the official @google/genai SDK sends and expects it.
// A pure WireCodec: no I/O. The model of an inbound request is in the URL path, so parseRequest returns model ''
// and stream false for the route to fill in.

import type { WireCodec } from '../codec.js';
import { buildGeminiRequest } from './build.js';
import { parseGeminiRequest } from './request.js';
import { parseGeminiResponse, renderGeminiResponse } from './response.js';
import { GeminiStreamParser, GeminiStreamRenderer } from './stream.js';

/** Canonical fields under a Gemini client's names. */
export const GEMINI_PARAM_NAMES: WireCodec['paramNames'] = {
  maxTokens: 'generationConfig.maxOutputTokens', temperature: 'generationConfig.temperature', topP: 'generationConfig.topP', topK: 'generationConfig.topK',
  stop: 'generationConfig.stopSequences', seed: 'generationConfig.seed', presencePenalty: 'generationConfig.presencePenalty',
  frequencyPenalty: 'generationConfig.frequencyPenalty', logitBias: 'logit_bias', logprobs: 'generationConfig.responseLogprobs',
  topLogprobs: 'generationConfig.logprobs', n: 'generationConfig.candidateCount', responseFormat: 'generationConfig.responseJsonSchema',
  thinking: 'generationConfig.thinkingConfig', tools: 'tools', toolChoice: 'toolConfig', parallelToolCalls: 'parallel_tool_calls',
  webSearch: 'tools.googleSearch', cacheControl: 'cache_control', promptCacheKey: 'prompt_cache_key', serviceTier: 'service_tier', user: 'user',
  metadata: 'metadata', prediction: 'prediction', image: 'inlineData.image', file: 'inlineData.file', audio: 'inlineData.audio',
  toolError: 'functionResponse.response.error', toolStrict: 'tools.functionDeclarations.strict', imageDetail: 'mediaResolution', toolGrammar: 'tools.custom.format',
};

export const geminiCodec: WireCodec = {
  format: 'gemini',
  paramNames: GEMINI_PARAM_NAMES,
  parseRequest: parseGeminiRequest,
  renderResponse: renderGeminiResponse,
  createStreamRenderer: (model) => new GeminiStreamRenderer(model),
  buildRequest: buildGeminiRequest,
  parseResponse: parseGeminiResponse,
  createStreamParser: () => new GeminiStreamParser(),
};
