// The `gemini` wire format: the Gemini API (generativelanguage v1beta) `generateContent` and
// `streamGenerateContent?alt=sse`, camelCase JSON as the official @google/genai SDK sends and expects it.
// A pure WireCodec: no I/O. The model of an inbound request is in the URL path, so parseRequest returns model ''
// and stream false for the route to fill in.

import type { WireCodec } from '../codec.js';
import { buildGeminiRequest } from './build.js';
import { parseGeminiRequest } from './request.js';
import { GEMINI_PARAM_NAMES } from './spelling.js';
import { parseGeminiResponse, renderGeminiResponse } from './response.js';
import { GeminiStreamParser, GeminiStreamRenderer } from './stream.js';

export { GEMINI_PARAM_NAMES };

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
