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

export const openaiCodec: WireCodec = {
  format: 'openai',
  parseRequest: parseChatRequest,
  renderResponse: (res, model) => renderChatResponse(res, model),
  // The WireCodec signature carries no include_usage: no usage chunk. Callers that know the client's
  // stream_options use createOpenAIChatRenderer(model, { includeUsage: chatIncludeUsage(body) }).
  createStreamRenderer: (model) => createOpenAIChatRenderer(model, { includeUsage: false }),
  buildRequest: buildChatRequest,
  parseResponse: parseChatResponse,
  createStreamParser: () => new OpenAIChatStreamParser(),
};
