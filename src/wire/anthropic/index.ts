// The `anthropic` wire format: Anthropic's Messages API (POST /v1/messages), in both directions, as a pure codec.
// request.ts: client body <-> canonical request, canonical request -> upstream request; response.ts: whole answers;
// stream.ts: SSE parser and renderer; usage.ts: the usage buckets; content.ts: content blocks <-> parts.

import type { WireCodec } from '../codec.js';
import { buildRequest, parseRequest } from './request.js';
import { parseResponse, renderResponse } from './response.js';
import { AnthropicStreamParser, AnthropicStreamRenderer } from './stream.js';

export const anthropicCodec: WireCodec = {
  format: 'anthropic',
  parseRequest,
  renderResponse,
  createStreamRenderer: (model) => new AnthropicStreamRenderer(model),
  buildRequest,
  parseResponse,
  createStreamParser: () => new AnthropicStreamParser(),
};
