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
import type { RequestTrace } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import { ClientAbort, type UpstreamResponse } from '../providers/upstream.js';
import { begin, openRequest, closeEventStream, finish, markAborted, modelHeader, openEventStream, settleEstimate, write, type Outcome, type RequestMeta } from './outcome.js';
import type { UpstreamFailure } from '../routing/failures.js';
import { callUpstream, relayUpstreamError, settleFailure, settleRoute, failRequest } from './upstream-call.js';
import { SseParser, formatFrame, type SseFrame } from '../wire/sse.js';
import { forwardedHeaders } from '../providers/forward-headers.js';

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

export async function handleChat(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { t0, startedAt, requestId, trace, o } = openRequest(ctx, req, reply, ENDPOINT);
  const cfg = ctx.config.current;
  const rawModel = (req.body as { model?: unknown } | null)?.model;
  const requestedModel = typeof rawModel === 'string' ? rawModel.slice(0, MAX_REQUESTED_MODEL) : '';
  const stream = (req.body as { stream?: unknown } | null)?.stream === true;
  reply.header('x-tollgate-requested-model', modelHeader(requestedModel));
  const meta = (): RequestMeta => ({ endpoint: ENDPOINT, requestId, startedAt, t0, requestedModel, stream });
  begin(ctx, req, o, meta);

  try {
    const body = validateChatBody(req.body);
    o.streamed.expected = expectedOutput(body);
    o.route = resolveModel(cfg, body.model);
    trace.routed(o.route.model, o.route.providerId, o.route.modelId);
    o.route = await ctx.router.connect(o.route);
    settleRoute(ctx, o, await forward(ctx, o.route, body, stream, trace, reply, o, t0));
  } catch (err) {
    failRequest(ctx, req, reply, o, err, { requestId, settleRoute: true });
  } finally {
    finish(ctx, req, trace, o, meta());
  }
}

async function forward(
  ctx: GatewayContext, route: Route, body: ChatBody, stream: boolean, trace: RequestTrace,
  reply: FastifyReply, o: Outcome, t0: number,
): Promise<UpstreamFailure | null> {
  const adapter = adapterFor(route);
  const wantsUsage = clientWantsUsage(body);
  const built = adapter.chatRequest(route.provider, route.modelId, body, stream);
  // The client's protocol headers (openai-beta, x-stainless-*...) go along, below the config's headers and the key.
  const headers = forwardedHeaders(reply.request.headers);
  for (const [k, v] of Object.entries(built.headers)) headers[k.toLowerCase()] = v;
  const upReq = { ...built, headers };
  const call = await callUpstream(ctx, route, upReq, stream, trace, reply, o);
  if (call === null) return null;
  const { res } = call;
  try {
    const failed = await relayUpstreamError(call, reply, o);
    if (failed !== null) return failed;
    const type = String(res.headers['content-type'] ?? '');
    if (stream && type.startsWith('text/event-stream')) {
      const answer = new AnswerText();
      await pipeStream(ctx, adapter, res, wantsUsage, trace, reply, o, t0, call.gone, answer);
      call.stamp();
      call.span.end(res.status, o.status === 'failure' ? o.errorType : null);
      // After the client has its whole stream: only a stream without (complete) usage is estimated.
      if (o.usageSource !== 'reported') await settleEstimate(o, { chat: body }, answer);
      return null;
    }
    const text = await res.text();
    call.stamp();
    let json: { id?: unknown; model?: unknown; choices?: { finish_reason?: unknown }[] };
    try {
      json = JSON.parse(text) as typeof json;
    } catch {
      call.span.end(res.status, 'invalid_json');
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider returned a body that is not JSON');
    }
    const usage = adapter.usageFromResponse(json);
    if (usage) {
      o.usage = usage;
      o.usageSource = 'reported';
    }
    trace.setResponse(typeof json.id === 'string' ? json.id : null, typeof json.model === 'string' ? json.model : null, finishReasons(json.choices));
    call.span.end(res.status, null);
    reply.code(200).header('content-type', 'application/json').send(text);
    if (!usage) await settleEstimate(o, { chat: body }, adapter.answerText(json));
    return null;
  } catch (err) {
    if (err instanceof TollgateError && !call.gone.aborted) throw err;
    settleFailure(err, call, reply, o);
    return null;
  } finally {
    call.release();
  }
}

function finishReasons(choices: unknown): string[] {
  if (!Array.isArray(choices)) return [];
  return choices.map((c: { finish_reason?: unknown }) => c?.finish_reason).filter((r): r is string => typeof r === 'string');
}

/** SSE pass-through: frames go to the client as they arrive; usage and timing are read from the typed chunks. */
async function pipeStream(
  ctx: GatewayContext, adapter: ChatAdapter, res: UpstreamResponse, wantsUsage: boolean, trace: RequestTrace,
  reply: FastifyReply, o: Outcome, t0: number, signal: ClientAbort, answer: AnswerText,
): Promise<void> {
  const raw = openEventStream(reply);
  const parser = new SseParser();
  let sawDone = false;
  let finished = false;
  let respId: string | null = null;
  let respModel: string | null = null;
  const reasons: string[] = [];

  /** One typed event in, the text to forward out ('' to forward nothing). */
  const onFrame = (f: SseFrame): string => {
    if (f.data === '[DONE]') {
      if (sawDone) return '';
      sawDone = true;
      return formatFrame('[DONE]');
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(f.data) as Record<string, unknown>;
    } catch {
      return ''; // not JSON: never forwarded
    }
    if (json.error !== undefined) {
      o.status = 'failure';
      o.errorType = 'upstream_stream_error';
      return formatFrame(f.data, f.event);
    }
    const info = adapter.inspectChunk(json);
    if (info.usage) {
      o.usage = info.usage;
      o.usageSource = 'reported';
    }
    if (info.deltas > 0) {
      answer.output(info.output);
      answer.reasoning(info.reasoning);
      o.streamed.chars += info.output.length + info.reasoning.length;
      if (o.ttftMs === null) o.ttftMs = performance.now() - t0;
    }
    respId ??= typeof json.id === 'string' ? json.id : null;
    respModel ??= typeof json.model === 'string' ? json.model : null;
    for (const r of finishReasons(json.choices)) {
      reasons.push(r);
      finished = true;
    }
    if (info.usageOnly && !wantsUsage) return '';
    if (!wantsUsage && json.usage !== undefined && json.usage !== null) {
      delete json.usage;
      return formatFrame(JSON.stringify(json), f.event);
    }
    return formatFrame(f.data, f.event);
  };

  try {
    // Everything one upstream read completes goes to the client in one write.
    for await (const chunk of res.body) {
      let out = '';
      for (const f of parser.push(chunk as Uint8Array)) out += onFrame(f);
      if (out) await write(raw, out);
    }
    let tail = '';
    for (const f of parser.end()) tail += onFrame(f);
    if (!sawDone && !finished && o.status === 'success') {
      if (tail) await write(raw, tail);
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
    // An upstream error event ended the stream: it is the last event, with no [DONE] (docs/errors.md).
    if (!sawDone && o.status === 'success') tail += formatFrame('[DONE]');
    if (tail) await write(raw, tail);
  } catch (err) {
    if (signal.aborted) {
      markAborted(o, reply);
    } else {
      const e = classifyTransportError(err);
      o.status = 'failure';
      o.errorType = e.code;
      await write(raw, formatFrame(JSON.stringify(errorBody(e, String(reply.getHeader('x-request-id') ?? '')))));
    }
  } finally {
    trace.setResponse(respId, respModel, reasons);
    closeEventStream(ctx, raw);
  }
}
