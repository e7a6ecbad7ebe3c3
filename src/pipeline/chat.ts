// POST /v1/chat/completions: validate, route, call upstream, pass the answer through (JSON or SSE frame by frame),
// and build exactly one usage record for the request, whatever happened. The record goes to the ledger (row +
// metrics) and closes the span.

import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError, errorBody } from '../core/errors.js';
import { openaiAdapter } from '../wire/openai/index.js';
import type { ChatAdapter, ChatBody } from '../wire/types.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import { AnswerText } from '../wire/estimate.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import type { ClientAbort, UpstreamResponse } from '../providers/upstream.js';
import { SentInput, settleCut, settleEstimate } from './outcome.js';
import { EventStreamOut, bodyEnded, markAborted, openEventStream, stallOf } from './reply.js';
import type { UpstreamFailure } from '../routing/failures.js';
import { reportToRouter, serveRequest, type ClientRequest } from './request.js';
import { answeredEmpty, callForClient, errorAnswer, notEventStream, notJson, readUpstreamError, relayedText, sendFailure, type UpstreamCall } from './upstream.js';
import { atTier } from '../ledger/types.js';
import { SseParser, formatFrame, type SseBlock } from '../wire/sse.js';
import { ChunkShape } from '../wire/openai/chunk-shape.js';
import { answerHeaders, forwardedHeaders } from '../providers/forward-headers.js';

export const ENDPOINT = 'chat.completions';

function adapterFor(route: Route): ChatAdapter {
  // `mock` speaks the OpenAI wire format in process; later formats add their adapters here.
  switch (route.provider.format) {
    case 'openai':
    case 'mock':
      return openaiAdapter;
    default:
      throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `provider format '${route.provider.format}' is not served on /v1/chat/completions yet`);
  }
}

export function validateChatBody(body: unknown): ChatBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'request body must be a JSON object');
  }
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', "'model' is required and must be a non-empty string", { param: 'model' });
  }
  if (!Array.isArray(b.messages)) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', "'messages' is required and must be an array", { param: 'messages' });
  }
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', "'stream' must be a boolean", { param: 'stream' });
  }
  return b as ChatBody;
}

/** The output the request allows (max_completion_tokens wins over max_tokens, as at OpenAI), or null. */
function expectedOutput(body: ChatBody): number | null {
  const n = body.max_completion_tokens ?? body.max_tokens;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : null;
}

function clientWantsUsage(body: ChatBody): boolean {
  return (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
}

export const CHAT_ROUTE = '/v1/chat/completions';

export function handleChat(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  return serveRequest(ctx, req, reply, ENDPOINT, async (request) => {
    const rawModel = (req.body as { model?: unknown } | null)?.model;
    request.named(typeof rawModel === 'string' ? rawModel.slice(0, MAX_REQUESTED_MODEL) : '', (req.body as { stream?: unknown } | null)?.stream === true);
    const body = validateChatBody(req.body);
    request.outcome.streamed.expected = expectedOutput(body);
    const { outcome } = request;
    outcome.route = resolveModel(ctx.config.current, body.model);
    request.trace.routed(outcome.route.model, outcome.route.providerId, outcome.route.modelId);
    outcome.route = await ctx.router.connect(outcome.route);
    reportToRouter(ctx, outcome, await forwardChat(request, outcome.route, body));
  });
}

/** The body as the client sent it to the route's OpenAI-format provider; its answer back byte for byte. */
async function forwardChat(request: ClientRequest, route: Route, body: ChatBody): Promise<UpstreamFailure | null> {
  const { ctx, reply, outcome } = request;
  const stream = request.facts.stream;
  const adapter = adapterFor(route);
  const built = adapter.chatRequest(route.provider, route.modelId, body, stream);
  // The client's protocol headers (openai-beta, x-stainless-*...) go along, below the config's headers and the key.
  const headers = forwardedHeaders(reply.request.headers);
  for (const [k, v] of Object.entries(built.headers)) headers[k.toLowerCase()] = v;
  outcome.sent = new SentInput(() => ({ chat: body }));
  const sent = await callForClient(request, (opts) => ctx.upstream.send(route, { ...built, headers }, { ...opts, stream }));
  if (sent === null) return null;
  const { call, clientGone } = sent;
  const { res } = call;
  const passed = answerHeaders(res.headers);
  if (passed !== null) reply.headers(passed);
  try {
    const failed = await readUpstreamError(call, outcome);
    if (failed !== null) {
      sendFailure(reply, failed, '');
      return failed;
    }
    if (answeredEmpty(call, outcome, reply)) return null;
    if (stream) {
      const refused = notEventStream(call, outcome, (json) => adapter.usageFromResponse(json));
      if (refused !== null) throw await refused;
      const answer = new AnswerText();
      await relayChatStream({ request, adapter, res, wantsUsage: clientWantsUsage(body), clientGone, answer, call });
      outcome.upstreamMs = call.elapsedMs();
      call.span?.end(res.status, outcome.status === 'failure' ? outcome.errorType : null);
      // After the client has its whole stream: what the upstream did not report is estimated.
      await settleEstimate(outcome, { chat: body }, answer);
      return null;
    }
    const text = await res.text();
    outcome.upstreamMs = call.elapsedMs();
    let json: { id?: unknown; model?: unknown; choices?: { finish_reason?: unknown }[] };
    try {
      json = JSON.parse(text) as typeof json;
    } catch {
      throw notJson(call);
    }
    // `null`, an array, a number: JSON, but no answer.
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw notJson(call, `JSON that is not an answer (${json === null ? 'null' : Array.isArray(json) ? 'an array' : typeof json})`);
    const refused = errorAnswer(call, json);
    if (refused !== null) throw refused;
    const usage = adapter.usageFromResponse(json);
    if (usage) {
      outcome.usage = usage;
      outcome.usageSource = 'reported';
    }
    request.trace.setResponse(typeof json.id === 'string' ? json.id : null, typeof json.model === 'string' ? json.model : null, finishReasons(json.choices));
    call.span?.end(res.status, null);
    reply.code(res.status).header('content-type', 'application/json').send(text);
    await settleEstimate(outcome, { chat: body }, adapter.answerText(json));
    return null;
  } catch (err) {
    if (clientGone.aborted) {
      markAborted(outcome, reply);
      await settleCut(outcome, { chat: body }, res.status);
      return null;
    }
    throw err instanceof TollgateError ? err : classifyTransportError(err);
  } finally {
    sent.release();
  }
}

function finishReasons(choices: unknown): string[] {
  if (!Array.isArray(choices)) return [];
  return choices.map((c: { finish_reason?: unknown }) => c?.finish_reason).filter((r): r is string => typeof r === 'string');
}

/** `choices[0].delta.content` of a chunk with one choice, when it is a non-empty string; else null. */
function onlyContent(json: Record<string, unknown>): string | null {
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const content = (choices[0] as { delta?: { content?: unknown } } | null)?.delta?.content;
  return typeof content === 'string' && content !== '' ? content : null;
}

/**
 * A text that ends with a blank line (any of the SSE line ends): what follows it is a block of its own. A CR followed
 * by LF is one line end (CRLF), never two: `data: x\r\n` is a block still open.
 */
const BLOCK_END = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)$/;
/** The test on the last 4 characters only (the longest blank line, CRLF CRLF): a whole chunk's text is not scanned. */
const endsBlock = (text: string): boolean => BLOCK_END.test(text.slice(-4));

/** What the fast path's stream relay needs. */
interface ChatStream {
  readonly request: ClientRequest;
  readonly adapter: ChatAdapter;
  readonly res: UpstreamResponse;
  /** The client asked for the usage chunk (stream_options.include_usage); otherwise it is read and not forwarded. */
  readonly wantsUsage: boolean;
  readonly clientGone: ClientAbort;
  /** Where the answer's text is kept, for an estimate when the upstream reports no usage. */
  readonly answer: AnswerText;
  /** The call: an error chunk, the upstream's own words, goes with its credentials out (relayedText). */
  readonly call: UpstreamCall;
}

/**
 * SSE pass-through: the upstream's blocks go to the client as their text came (comments, `retry:`, `id:` and line
 * ends kept), as each read completes them; usage and timing are read from the typed chunks. The gateway changes a
 * block only where it must: the usage it asked for and the client did not (the usage-only chunk dropped, or the
 * `usage` taken out of a chunk that carries more, written in the gateway's form), a second `[DONE]` or a frame that is
 * not JSON (dropped), an error chunk's text (the call's credentials out); and it appends the `[DONE]` or the terminal
 * error the upstream did not send.
 */
async function relayChatStream(s: ChatStream): Promise<void> {
  const { request, adapter, wantsUsage, answer } = s;
  const { reply, outcome, t0 } = request;
  const raw = openEventStream(reply, stallOf(request.outcome.route), s.res.status);
  const parser = new SseParser();
  let sawDone = false;
  let finished = false;
  let respId: string | null = null;
  let respModel: string | null = null;
  // The service tier a chunk said (OpenAI repeats it on every chunk; a vendor may say it on some only).
  let tier: unknown;
  const reasons: string[] = [];
  const shape = new ChunkShape();
  /** The service tier the learnt shape says (its chunks say it again). */
  let shapeTier: string | undefined;

  /** A chunk's text seen: kept for an estimate, counted as progress, and the first one's time is the time to first token. */
  const sawText = (output: string, reasoning: string): void => {
    answer.output(output);
    answer.reasoning(reasoning);
    outcome.streamed.chars += output.length + reasoning.length;
    if (outcome.ttftMs === null) outcome.ttftMs = performance.now() - t0;
  };

  /** One block in, the text to forward out ('' to forward nothing). */
  const onBlock = (b: SseBlock): string => {
    const f = b.frame;
    if (f === null) return b.raw; // comments (an upstream's keep-alives while it thinks), `retry:`: as they came
    if (f.data === '[DONE]') {
      if (sawDone) return '';
      sawDone = true;
      return b.raw;
    }
    // A content chunk of the shape learnt from one parsed before it: its text, without a parse (wire/openai/chunk-shape.ts).
    const text = shape.content(f.data);
    if (text !== null) {
      if (shapeTier !== undefined) tier = shapeTier;
      sawText(text, '');
      return b.raw;
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(f.data) as Record<string, unknown>;
    } catch {
      return ''; // not JSON: never forwarded
    }
    if (json.error !== undefined) {
      outcome.status = 'failure';
      outcome.errorType = 'upstream_stream_error';
      return relayedText(s.call, b.raw);
    }
    if (typeof json.service_tier === 'string') tier = json.service_tier;
    const info = adapter.inspectChunk(json);
    if (info.usage) {
      outcome.usage = tier === undefined ? info.usage : atTier(info.usage, tier);
      outcome.usageSource = 'reported';
    }
    if (info.deltas > 0) sawText(info.output, info.reasoning);
    respId ??= typeof json.id === 'string' ? json.id : null;
    respModel ??= typeof json.model === 'string' ? json.model : null;
    const finishes = finishReasons(json.choices);
    for (const r of finishes) {
      reasons.push(r);
      finished = true;
    }
    // Text only: the shape of the chunks like it.
    const content = onlyContent(json);
    if (content !== null && content === info.output && info.reasoning === '' && info.deltas === 1 && json.usage == null && finishes.length === 0) {
      shape.learn({ data: f.data, content, obfuscation: json.obfuscation });
      shapeTier = typeof json.service_tier === 'string' ? json.service_tier : undefined;
    }
    if (info.usageOnly && !wantsUsage) return '';
    if (!wantsUsage && json.usage !== undefined && json.usage !== null) {
      delete json.usage;
      return formatFrame(JSON.stringify(json), f.event, f.id);
    }
    return b.raw;
  };
  // Whether what the client has so far ends mid-block (a final block without its blank line): what the gateway
  // appends then starts with one, so that it is a frame of its own.
  let open = false;
  const out = new EventStreamOut(raw);
  /** `end`: the stream's last words; `last`: nothing more will be read (the text goes in the end's write). */
  const send = async (text: string, own = '', end = false, last = end): Promise<void> => {
    let piece = text + (own !== '' && (open || (text !== '' && !endsBlock(text))) ? `\n\n${own}` : own);
    // The stream's last block without its blank line (the upstream closed after it): this gateway counted it as an
    // event (an error chunk, a [DONE]), so the client's parser, which drops an event not ended at the close, must too.
    if (end && piece !== '' && !endsBlock(piece)) piece += '\n\n';
    if (piece === '') return;
    open = !endsBlock(piece);
    await out.write(piece, last);
  };

  try {
    // Everything one upstream read completes goes to the client in one write (the last read's with the end).
    for await (const chunk of s.res.body) {
      let text = '';
      for (const b of parser.blocks(chunk as Uint8Array)) text += onBlock(b);
      if (text) await send(text, '', false, bodyEnded(s.res.body));
    }
    let tail = '';
    for (const b of parser.blocks(null)) tail += onBlock(b);
    if (!sawDone && !finished && outcome.status === 'success') {
      await send(tail);
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
    // An upstream error event ended the stream: it is the last event, with no [DONE] (docs/errors.md).
    await send(tail, !sawDone && outcome.status === 'success' ? formatFrame('[DONE]') : '', true);
  } catch (err) {
    if (s.clientGone.aborted) {
      markAborted(outcome, reply);
    } else {
      const e = classifyTransportError(err);
      outcome.status = 'failure';
      outcome.errorType = e.code;
      await send('', formatFrame(JSON.stringify(errorBody(e, request.requestId))), false, true);
    }
  } finally {
    request.trace.setResponse(respId, respModel, reasons);
    out.close({ closing: request.ctx.closing() });
  }
}
