// The codec for each wire format. `mock` answers in OpenAI Chat Completions (in process, see providers/mock).

import type { WireFormat } from '../config/types.js';
import { anthropicCodec } from './anthropic/index.js';
import type { WireCodec } from './codec.js';
import { geminiCodec } from './gemini/index.js';
import { openaiCodec } from './openai/codec.js';
import { responsesCodec } from './openai-responses/index.js';
import { anthropicSameFormat } from './anthropic/same-format.js';
import { geminiSameFormat } from './gemini/same-format.js';
import { responsesSameFormat } from './openai-responses/same-format.js';
import type { SameFormat } from './same-format.js';

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

/** The same-format passthrough descriptor of a format (OpenAI Chat has its own fast path, src/pipeline/chat.ts). */
const SAME_FORMAT: Readonly<Partial<Record<WireFormat, SameFormat>>> = {
  'openai-responses': responsesSameFormat,
  anthropic: anthropicSameFormat,
  gemini: geminiSameFormat,
};

export function sameFormatFor(format: WireFormat): SameFormat | undefined {
  return SAME_FORMAT[format];
}
