// The translating pipeline: a client in one wire format, a provider in any format. The client's codec parses the
// request into the canonical model, the provider's codec builds the upstream request and parses the answer (whole,
// or event by event), and the client's codec renders it back. One usage record per request, as on the chat path.
// OpenAI Chat to an OpenAI-format provider keeps its byte-for-byte fast path in chat.ts.

import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError, errorBody } from '../errors.js';
import type { StreamParser, StreamRenderer, Target, WireCodec } from '../providers/codec.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import type { CanonicalEvent, CanonicalRequest } from '../translate/canonical.js';
import { fitCapabilities } from '../translate/capabilities.js';
import { parseThinkingSuffix } from '../translate/thinking.js';
import { MAX_REQUESTED_MODEL } from '../usage/record.js';
import { NO_USAGE } from '../usage/types.js';
import { uuidv7 } from '../usage/uuidv7.js';
import type { RequestTrace } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { ClientAbort, classifyTransportError, type UpstreamResponse } from './dispatch.js';
import { closeEventStream, finish, markAborted, newOutcome, openEventStream, write, type Outcome } from './outcome.js';
import { callUpstream, relayUpstreamError, settleFailure } from './upstream-call.js';
import { SseParser } from './sse.js';

/** How one inbound endpoint speaks: its codec, its usage-row endpoint name, and where model and stream come from. */
export interface InboundSpec {
  readonly endpoint: string;
  readonly codec: WireCodec;
  /** Model and streaming named in the URL (Gemini's `{model}:streamGenerateContent`); otherwise the body's. */
  fromUrl?(req: FastifyRequest): { model: string; stream: boolean };
  /** A renderer that needs the request (OpenAI Chat's include_usage); otherwise the codec's own. */
  renderer?(req: FastifyRequest, model: string, requestId: string): StreamRenderer;
}

/** The codec that speaks a provider's format; `mock` answers in OpenAI Chat. */
export type CodecLookup = (format: Route['provider']['format']) => WireCodec;

/**
 * Fit a request to its target: the suffix's thinking level wins, max_tokens is clamped to the model's ceiling, and
 * what the model's capabilities exclude is removed (translate/capabilities.ts).
 */
export function fitRequest(req: CanonicalRequest, route: Route, model: string, thinking: CanonicalRequest['thinking'], stream: boolean): CanonicalRequest {
  const ceiling = route.modelConfig?.max_output_tokens;
  const maxTokens = ceiling !== undefined && req.maxTokens !== undefined ? Math.min(req.maxTokens, ceiling) : req.maxTokens;
  return fitCapabilities({ ...req, model, stream, maxTokens, thinking: thinking ?? req.thinking }, route.modelConfig);
}

export async function handleTranslated(
  ctx: GatewayContext, codecs: CodecLookup, inbound: InboundSpec, req: FastifyRequest, reply: FastifyReply,
): Promise<void> {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = uuidv7(startedAt);
  const cfg = ctx.config.current;
  const trace = ctx.tracing.start(req.headers, inbound.endpoint);
  const o = newOutcome();
  let requestedModel = '';
  let stream = false;
  reply.header('x-request-id', requestId);
  try {
    const parsed = inbound.codec.parseRequest(req.body);
    // The body's model comes suffix-free from the codec; a model named in the URL is stripped here.
    const url = inbound.fromUrl?.(req);
    const named = url ? parseThinkingSuffix(url.model) : { model: parsed.model, thinking: undefined };
    requestedModel = named.model.slice(0, MAX_REQUESTED_MODEL);
    stream = url ? url.stream : parsed.stream;
    o.route = resolveModel(cfg, named.model);
    trace.routed(o.route.model, o.route.providerId, o.route.modelId);
    const canonical = fitRequest(parsed, o.route, named.model, named.thinking, stream);
    const renderer = () => (inbound.renderer ? inbound.renderer(req, canonical.model, requestId) : inbound.codec.createStreamRenderer(canonical.model));
    await forward(ctx, codecs(o.route.provider.format), inbound.codec, renderer, o.route, canonical, trace, reply, o, t0);
  } catch (err) {
    const e = err instanceof TollgateError ? err : new TollgateError('TOLLGATE_ERR_INTERNAL', 'internal error', { cause: err });
    o.status = 'failure';
    o.httpStatus = e.status;
    o.errorType = e.code;
    req.log[e.level]({ err: e.cause ?? e, code: e.code, requestId }, e.message);
    if (!reply.sent && !reply.raw.headersSent) reply.code(e.status).send(errorBody(e, requestId));
  } finally {
    finish(ctx, req, trace, o, { endpoint: inbound.endpoint, requestId, startedAt, t0, requestedModel, stream });
  }
}

async function forward(
  ctx: GatewayContext, outbound: WireCodec, client: WireCodec, renderer: () => StreamRenderer, route: Route,
  canonical: CanonicalRequest, trace: RequestTrace, reply: FastifyReply, o: Outcome, t0: number,
): Promise<void> {
  const target: Target = { providerId: route.providerId, provider: route.provider, modelId: route.modelId, model: route.modelConfig };
  const upReq = outbound.buildRequest(canonical, target);
  const call = await callUpstream(ctx, route, upReq, canonical.stream, trace, reply, o);
  if (call === null) return;
  const { res } = call;
  try {
    // An upstream error status reaches the client with its retry headers; the body is passed as it came.
    if (await relayUpstreamError(call, reply, o)) return;
    if (canonical.stream) {
      await pipeEvents(ctx, outbound.createStreamParser(), renderer(), res, reply, o, t0, call.gone);
      call.stamp();
      call.span.end(res.status, o.status === 'failure' ? o.errorType : null);
      return;
    }
    const text = await res.text();
    call.stamp();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      call.span.end(res.status, 'invalid_json');
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider returned a body that is not JSON');
    }
    const answer = outbound.parseResponse(json);
    if (answer.usage) {
      o.usage = answer.usage;
      o.usageSource = 'reported';
    }
    trace.setResponse(answer.id, answer.model, [answer.stopReason]);
    call.span.end(res.status, null);
    reply.code(200).header('content-type', 'application/json').send(JSON.stringify(client.renderResponse(answer, canonical.model)));
  } catch (err) {
    if (err instanceof TollgateError && !call.gone.aborted) throw err;
    settleFailure(err, call, reply, o);
  } finally {
    call.release();
  }
}

/** Upstream SSE -> canonical events -> the client's SSE. Usage and timing come from the canonical events. */
async function pipeEvents(
  ctx: GatewayContext, parser: StreamParser, renderer: StreamRenderer, res: UpstreamResponse,
  reply: FastifyReply, o: Outcome, t0: number, gone: ClientAbort,
): Promise<void> {
  const raw = openEventStream(reply);
  const sse = new SseParser();
  let deltas = 0;
  let upstreamError = '';
  let upstreamCode = '';
  const onEvent = (e: CanonicalEvent): string => {
    switch (e.type) {
      case 'usage':
        o.usage = e.usage; // a later report replaces an earlier one: counted once
        o.usageSource = 'reported';
        break;
      case 'text_delta':
      case 'reasoning_delta':
      case 'tool_call_delta':
        deltas++;
        if (o.ttftMs === null) o.ttftMs = performance.now() - t0;
        break;
      case 'error':
        // Rendered once, as the client format's terminal error, when the stream ends.
        o.status = 'failure';
        o.errorType = 'upstream_stream_error';
        upstreamError = e.message;
        upstreamCode = e.code ?? '';
        return '';
      default:
        break;
    }
    return renderer.event(e);
  };
  try {
    for await (const chunk of res.body) {
      let out = '';
      for (const f of sse.push(chunk as Uint8Array)) for (const e of parser.frame(f)) out += onEvent(e);
      if (out) await write(raw, out);
    }
    let tail = '';
    for (const f of sse.end()) for (const e of parser.frame(f)) tail += onEvent(e);
    for (const e of parser.end()) tail += onEvent(e);
    if (!parser.terminated && o.status === 'success') {
      if (tail) await write(raw, tail);
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
    // The upstream's own error kind (e.g. overloaded_error) reaches the client; the row keeps upstream_stream_error.
    tail += o.status === 'success' ? renderer.end() : renderer.error(upstreamCode || o.errorType, upstreamError || 'the upstream provider reported an error');
    await write(raw, tail);
  } catch (err) {
    if (gone.aborted) {
      markAborted(o, reply);
    } else {
      const e = err instanceof TollgateError ? err : classifyTransportError(err);
      o.status = 'failure';
      o.errorType = e.code;
      await write(raw, renderer.error(e.code, e.message));
    }
  } finally {
    // A stream that did not finish before its output was reported (none at all, or only the input side, as
    // Anthropic's message_start gives): output estimated from the deltas seen, flagged 'estimated'. A stream that
    // finished without usage keeps null buckets (usage_source 'none'): nothing is guessed.
    if (o.status !== 'success' && deltas > 0 && o.usage.output === null && o.usage.reasoning === null) {
      o.usage = { ...(o.usageSource === 'none' ? NO_USAGE : o.usage), output: deltas };
      o.usageSource = 'estimated';
    }
    closeEventStream(ctx, raw);
  }
}
