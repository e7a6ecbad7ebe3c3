// The codec for each wire format. `mock` answers in OpenAI Chat Completions (in process, see providers/mock).

import type { WireFormat } from '../config/types.js';
import { anthropicCodec } from './anthropic/index.js';
import type { WireCodec } from './codec.js';
import { geminiCodec } from './gemini/index.js';
import { openaiCodec } from './openai/codec.js';
import { responsesCodec } from './openai-responses/index.js';

const CODECS: Readonly<Record<WireFormat, WireCodec>> = {
  openai: openaiCodec,
  mock: openaiCodec,
  'openai-responses': responsesCodec,
  anthropic: anthropicCodec,
  gemini: geminiCodec,
};

export function codecFor(format: WireFormat): WireCodec {
  return CODECS[format];
}
