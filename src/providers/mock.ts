// The built-in `mock` wire format: an in-process upstream that speaks OpenAI Chat Completions exactly (JSON and
// SSE), with deterministic text, usage and latency. It lets a new user try the whole loop with no keys and no
// network, and gives benchmarks an in-process reference. Nothing here is random.
//
// Text: `chunks` words (or max_tokens words if fewer) from a fixed sentence; each word is one output token.
// Input tokens: `mock.input_tokens` if set, else ceil(characters of all message text / 4), at least 1.
// Latency: `latency_ms` before the response starts, then `chunk_delay_ms` between stream chunks.

import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockOptions } from '../config/types.js';
import { readBytes, type AbortLike, type Transport, type UpstreamResponse } from './upstream.js';

const WORDS = 'Tollgate demo reply: every token you see here is counted once, priced, and recorded three ways.'.split(' ');

export function mockWords(count: number): string[] {
  return Array.from({ length: count }, (_, i) => WORDS[i % WORDS.length]!);
}

function messageChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let chars = 0;
  for (const m of messages as { content?: unknown }[]) {
    if (typeof m?.content === 'string') chars += m.content.length;
    else if (Array.isArray(m?.content)) {
      for (const part of m.content as { text?: unknown }[]) if (typeof part?.text === 'string') chars += part.text.length;
    }
  }
  return chars;
}

export interface MockPlan {
  readonly words: string[];
  readonly inputTokens: number;
  readonly finishReason: 'stop' | 'length';
}

export function planMock(opts: MockOptions, body: Record<string, unknown>): MockPlan {
  const cap = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : Infinity;
  const count = Math.max(1, Math.min(opts.chunks, cap));
  return {
    words: mockWords(count),
    inputTokens: opts.input_tokens ?? Math.max(1, Math.ceil(messageChars(body.messages) / 4)),
    finishReason: count < opts.chunks ? 'length' : 'stop',
  };
}

function usageOf(plan: MockPlan): Record<string, unknown> {
  const out = plan.words.length;
  return {
    prompt_tokens: plan.inputTokens,
    completion_tokens: out,
    total_tokens: plan.inputTokens + out,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

function responseHeaders(stream: boolean): Record<string, string> {
  return { 'content-type': stream ? 'text/event-stream; charset=utf-8' : 'application/json', 'x-tollgate-mock': '1' };
}

/** Serve one request in process, as an upstream would. `signal` aborts the stream. */
export async function mockRespond(opts: MockOptions, body: Readonly<Record<string, unknown>>, abort: AbortLike): Promise<UpstreamResponse> {
  const signal = abort instanceof AbortSignal ? abort : abort.toSignal();
  const model = String(body.model);
  const plan = planMock(opts, body);
  const id = `chatcmpl-mock-${plan.inputTokens}-${plan.words.length}`;
  const created = 1700000000;
  if (opts.latency_ms > 0) await sleep(opts.latency_ms, undefined, { signal });
  const stream = body.stream === true;
  if (!stream) {
    const json = JSON.stringify({
      id, object: 'chat.completion', created, model,
      choices: [{ index: 0, message: { role: 'assistant', content: plan.words.join(' '), refusal: null }, logprobs: null, finish_reason: plan.finishReason }],
      usage: usageOf(plan),
    });
    const bytes = Buffer.from(json);
    return { status: 200, headers: responseHeaders(false), body: Readable.from([bytes]), text: async () => json, bytes: async () => bytes };
  }
  const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const base = { id, object: 'chat.completion.chunk', created, model };
  async function* frames(): AsyncGenerator<Buffer> {
    const line = (o: unknown) => Buffer.from(`data: ${JSON.stringify(o)}\n\n`);
    const u = includeUsage ? { usage: null } : {};
    yield line({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], ...u });
    for (let i = 0; i < plan.words.length; i++) {
      if (opts.chunk_delay_ms > 0) await sleep(opts.chunk_delay_ms, undefined, { signal });
      const text = i === 0 ? plan.words[i]! : ` ${plan.words[i]!}`;
      yield line({ ...base, choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }], ...u });
    }
    yield line({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: plan.finishReason }], ...u });
    if (includeUsage) yield line({ ...base, choices: [], usage: usageOf(plan) });
    yield Buffer.from('data: [DONE]\n\n');
  }
  const sse = Readable.from(frames());
  return { status: 200, headers: responseHeaders(true), body: sse, text: async () => (await readBytes(sse)).toString('utf8'), bytes: () => readBytes(sse) };
}

/** The mock as a transport: answers in process, reading the request body as a value. */
export const mockTransport: Transport = {
  send: (_id, provider, req, opts) => {
    // In process, the provider has the request as soon as it is sent.
    if (!opts.signal.aborted) opts.onDispatch?.();
    return mockRespond(provider.mock, req.body, opts.signal);
  },
};
