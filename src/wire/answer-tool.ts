// A response format sent as a forced tool (Anthropic without structured outputs: src/wire/anthropic/request.ts
// builds a `json_response` tool whose input schema is the format's schema, and forces it). The model's call to that
// tool is the answer: its arguments become the answer's text, and the stop reason is a normal end, so the client
// sees the JSON it asked for as text, in its own format. Pure: a whole answer is rewritten, a stream event by event.

import type { CanonicalEvent, CanonicalResponse, Part } from './canonical.js';

/** The answer with calls to `tool` turned into text (their arguments); a stop for tool calls becomes an end. */
export function unwrapAnswerTool(res: CanonicalResponse, tool: string): CanonicalResponse {
  if (!res.content.some((p) => p.type === 'tool_call' && p.name === tool)) return res;
  const content = res.content.map((p): Part => (p.type === 'tool_call' && p.name === tool ? { type: 'text', text: p.arguments } : p));
  const otherCalls = content.some((p) => p.type === 'tool_call');
  return { ...res, content, stopReason: res.stopReason === 'tool_calls' && !otherCalls ? 'end' : res.stopReason };
}

/** The same rewrite on a stream: the answer tool's call block becomes a text block, its argument deltas text deltas. */
export class AnswerToolEvents {
  readonly #tool: string;
  readonly #blocks = new Set<number>();
  #otherCalls = false;

  constructor(tool: string) {
    this.#tool = tool;
  }

  /** The event as the client should see it; null for nothing (an empty argument fragment). */
  map(e: CanonicalEvent): CanonicalEvent | null {
    switch (e.type) {
      case 'tool_call_start':
        if (e.name !== this.#tool) {
          this.#otherCalls = true;
          return e;
        }
        this.#blocks.add(e.index);
        return { type: 'text_start', index: e.index };
      case 'tool_call_delta':
        if (!this.#blocks.has(e.index)) return e;
        return e.arguments === '' ? null : { type: 'text_delta', index: e.index, text: e.arguments };
      case 'finish':
        return e.stopReason === 'tool_calls' && this.#blocks.size > 0 && !this.#otherCalls ? { ...e, stopReason: 'end' } : e;
      default:
        return e;
    }
  }
}
