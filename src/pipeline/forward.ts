// Forwarding through the canonical model: one client request (an Exchange) to one target. The request is fitted
// to the target (suffix, clamp, capabilities), built by the provider's codec (which reports what it dropped: the
// x-tollgate-dropped-params header), sent, and its answer (whole, or event by event) parsed and rendered back in the
// client's format. translated.ts (a model) and combo/ (each attempt) both forward through here.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import type { BuiltRequest, StreamParser, StreamRenderer, Target, WireCodec } from '../wire/codec.js';
import { errorFailure, type UpstreamFailure } from '../routing/failures.js';
import { type Route } from '../routing/resolve.js';
import { AnswerToolEvents, unwrapAnswerTool } from '../wire/answer-tool.js';
import type { CanonicalEvent, CanonicalField, CanonicalRequest, CanonicalResponse } from '../wire/canonical.js';
import { fitCapabilities } from '../wire/capabilities.js';
import { AnswerText, answerOf } from '../wire/estimate.js';
import { finishReasonOf, type RequestTrace } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import { ClientAbort, type UpstreamResponse } from '../providers/upstream.js';
import { StreamFacts, closeEventStream, markAborted, openEventStream, settleEstimate, write, type Outcome } from './outcome.js';
import { callUpstream, readUpstreamError, sendFailure, settleFailure, streamFailure } from './upstream-call.js';
import { SseParser } from '../wire/sse.js';
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

/** One client request on its way through the translating pipeline. */
export interface Exchange {
  readonly ctx: GatewayContext;
  readonly codecs: CodecLookup;
  readonly inbound: InboundSpec;
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  readonly trace: RequestTrace;
  readonly requestId: string;
  readonly startedAt: number;
  readonly t0: number;
  readonly stream: boolean;
  /** The request as the client sent it (model = the name it asked for, suffix removed). */
  readonly parsed: CanonicalRequest;
}

/**
 * Fit a request to its target: the suffix's thinking level wins, max_tokens is clamped to the model's ceiling, and
 * what the model's capabilities exclude is removed (translate/capabilities.ts).
 */
export function fitRequest(req: CanonicalRequest, route: Route, model: string, thinking: CanonicalRequest['thinking'], stream: boolean): CanonicalRequest {
  const ceiling = route.modelConfig?.max_output_tokens;
  const maxTokens = ceiling !== undefined && req.maxTokens !== undefined ? Math.min(req.maxTokens, ceiling) : req.maxTokens;
  return fitCapabilities({ ...req, model, stream, maxTokens, thinking: thinking ?? req.thinking }, route.modelConfig);
}

/** The response header listing the client parameters a translated request did not carry (docs/translation.md). */
export const DROPPED_PARAMS_HEADER = 'x-tollgate-dropped-params';

/**
 * The upstream request for `target`, or the 400 naming the client's parameter when the target cannot carry it
 * without changing the answer's meaning (BuiltRequest.refused).
 */
export function buildUpstream(x: Exchange, outbound: WireCodec, canonical: CanonicalRequest, target: Target): BuiltRequest {
  const built = outbound.buildRequest(canonical, target);
  if (built.refused !== undefined) {
    const param = x.inbound.codec.paramNames[built.refused.field];
    throw new TollgateError('TOLLGATE_ERR_NOT_SUPPORTED', `'${param}' ${built.refused.reason}`, { param });
  }
  return built;
}

/**
 * The client parameters a request sent as `canonical` (built as `dropped`) does not carry, under the client's
 * names, sorted: what the client's codec had no place for, what the model's capabilities removed, what the target
 * format cannot take.
 */
export function droppedParams(names: WireCodec['paramNames'], canonical: CanonicalRequest, dropped: readonly CanonicalField[]): string[] {
  const out = new Set<string>(canonical.unmapped ?? []);
  for (const f of [...(canonical.removed ?? []), ...dropped]) out.add(names[f]);
  return [...out].sort();
}

/** Tell the client (header, set before the first byte) and the request span which parameters were not carried. */
export function listDropped(x: Exchange, params: readonly string[]): void {
  if (params.length > 0) x.reply.header(DROPPED_PARAMS_HEADER, params.join(', '));
  else x.reply.removeHeader(DROPPED_PARAMS_HEADER);
  x.trace.droppedParams(params);
}

/** The client's stream renderer for an answer shown under `model`. */
export function rendererFor(x: Exchange, model: string): StreamRenderer {
  return x.inbound.renderer ? x.inbound.renderer(x.req, model, x.requestId) : x.inbound.codec.createStreamRenderer(model);
}

export async function forward(
  x: Exchange, resolved: Route, canonical: CanonicalRequest, o: Outcome, t0: number, defer: boolean, opts: { readonly dropped?: readonly string[] } = {},
): Promise<UpstreamFailure | null> {
  const { ctx, reply } = x;
  let route: Route;
  try {
    route = await ctx.router.connect(resolved);
  } catch (err) {
    if (!defer || !(err instanceof TollgateError)) throw err;
    o.route = resolved;
    return failWith(o, err);
  }
  o.route = route;
  const outbound = x.codecs(route.provider.format);
  const target: Target = { providerId: route.providerId, provider: route.provider, modelId: route.modelId, model: route.modelConfig };
  const upReq = buildUpstream(x, outbound, canonical, target);
  listDropped(x, opts.dropped ?? droppedParams(x.inbound.codec.paramNames, canonical, upReq.dropped));
  let call;
  try {
    call = await callUpstream(ctx, route, upReq, canonical.stream, x.trace, reply, o);
  } catch (err) {
    if (!defer || !(err instanceof TollgateError)) throw err;
    return failWith(o, err);
  }
  if (call === null) return null;
  const { res } = call;
  try {
    // An upstream error status reaches the client with its retry headers; the body is passed as it came.
    const failed = await readUpstreamError(call, o);
    if (failed !== null) {
      if (!defer) sendFailure(reply, failed, x.requestId);
      return failed;
    }
    if (canonical.stream) {
      // A 200 that is not an event stream (an HTML page from a proxy in between, a JSON body) is refused before any
      // byte reaches the client, as on the fast path: a 502 in the gateway's error shape. No content type: read it.
      const type = String(res.headers['content-type'] ?? 'text/event-stream');
      if (!type.startsWith('text/event-stream')) {
        call.stamp();
        call.span.end(res.status, 'not_event_stream');
        throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider answered a stream request with ${type.split(';')[0]}, not an event stream`);
      }
      const answer = new AnswerText();
      const parser = answerToolParser(outbound.createStreamParser(), upReq.answerTool);
      const early = await pipeEvents(ctx, parser, rendererFor(x, route.model), res, reply, o, t0, call.gone, defer, x.trace, answer);
      call.stamp();
      call.span.end(res.status, o.status === 'failure' ? o.errorType : null);
      // After the client has its whole stream: what the upstream did not report is estimated.
      if (early === null) await settleEstimate(o, { canonical }, answer);
      return early;
    }
    const text = await res.text();
    call.stamp();
    const answer = readAnswer(outbound, res.status, text, o, upReq.answerTool);
    x.trace.setResponse(answer.id, answer.model, [finishReasonOf(answer.stopReason)]);
    call.span.end(res.status, null);
    reply.code(200).header('content-type', 'application/json').send(JSON.stringify(x.inbound.codec.renderResponse(answer, route.model)));
    if (answer.usage === null) await settleEstimate(o, { canonical }, answerOf(answer.content));
    return null;
  } catch (err) {
    if (err instanceof TollgateError && !call.gone.aborted) {
      if (defer) return failWith(o, err);
      throw err;
    }
    settleFailure(err, call, reply, o);
    return null;
  } finally {
    call.release();
  }
}

/** The provider's stream parser, with the calls of a response-format tool (`answerTool`) turned into text. */
function answerToolParser(inner: StreamParser, answerTool: string | undefined): StreamParser {
  if (answerTool === undefined) return inner;
  const events = new AnswerToolEvents(answerTool);
  const map = (es: CanonicalEvent[]): CanonicalEvent[] => es.flatMap((e) => events.map(e) ?? []);
  return {
    frame: (f) => map(inner.frame(f)),
    end: () => map(inner.end()),
    get terminated() {
      return inner.terminated;
    },
  };
}

/**
 * A whole (non-streamed) upstream answer, parsed by the provider's codec (calls of a response-format tool,
 * `answerTool`, turned into text); its usage goes into the outcome.
 */
export function readAnswer(outbound: WireCodec, status: number, text: string, o: Outcome, answerTool?: string): CanonicalResponse {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    o.span?.end(status, 'invalid_json');
    throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider returned a body that is not JSON');
  }
  const parsed = outbound.parseResponse(json);
  const answer = answerTool === undefined ? parsed : unwrapAnswerTool(parsed, answerTool);
  if (answer.usage) {
    o.usage = answer.usage;
    o.usageSource = 'reported';
  }
  return answer;
}

/** The outcome of a call that failed with one of the gateway's errors, as a failure a combo can act on. */
export function failWith(o: Outcome, e: TollgateError): UpstreamFailure {
  o.status = 'failure';
  o.httpStatus = e.status;
  o.errorType = e.code;
  o.span?.end(null, e.code);
  return errorFailure(e);
}

/**
 * Upstream SSE -> canonical events -> the client's SSE. Usage and timing come from the canonical events. With
 * `defer`, the client's stream opens with the first output, and a failure before it is returned (nothing sent).
 */
async function pipeEvents(
  ctx: GatewayContext, parser: StreamParser, renderer: StreamRenderer, res: UpstreamResponse,
  reply: FastifyReply, o: Outcome, t0: number, gone: ClientAbort, defer: boolean, trace: RequestTrace, answer: AnswerText,
): Promise<UpstreamFailure | null> {
  let raw = defer ? null : openEventStream(reply);
  const facts = new StreamFacts(o, answer, t0);
  const emit = (s: string): Promise<void> | void => write((raw ??= openEventStream(reply)), s);
  const sse = new SseParser();
  let upstreamError = '';
  let upstreamCode = '';
  const onEvent = (e: CanonicalEvent): string => {
    facts.observe(e);
    if (e.type === 'error') {
      // Rendered once, as the client format's terminal error, when the stream ends.
      upstreamError = e.message;
      upstreamCode = e.code ?? '';
      return '';
    }
    return renderer.event(e);
  };
  try {
    for await (const chunk of res.body) {
      let out = '';
      for (const f of sse.push(chunk as Uint8Array)) for (const e of parser.frame(f)) out += onEvent(e);
      if (out) await emit(out);
      else if (raw === null && o.status === 'failure') break; // an error before any output: the next member may answer
    }
    let tail = '';
    if (raw !== null || o.status !== 'failure') {
      for (const f of sse.end()) for (const e of parser.frame(f)) tail += onEvent(e);
      for (const e of parser.end()) tail += onEvent(e);
    }
    if (!parser.terminated && o.status === 'success') {
      if (tail) await emit(tail);
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
    if (raw === null && o.status === 'failure') {
      res.body.destroy();
      return { ...streamFailure(o.errorType), status: 502, retryable: true, error: new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', upstreamError || 'the upstream provider reported an error') };
    }
    // The upstream's own error kind (e.g. overloaded_error) reaches the client; the row keeps upstream_stream_error.
    tail += o.status === 'success' ? renderer.end() : renderer.error(upstreamCode || o.errorType, upstreamError || 'the upstream provider reported an error');
    await emit(tail);
  } catch (err) {
    if (gone.aborted) {
      markAborted(o, reply);
    } else {
      const e = err instanceof TollgateError ? err : classifyTransportError(err);
      o.status = 'failure';
      o.errorType = e.code;
      if (raw === null && defer) {
        res.body.destroy();
        return errorFailure(e);
      }
      await emit(renderer.error(e.code, e.message));
    }
  } finally {
    // The text seen is in `answer`; what the upstream did not report is estimated once the stream is closed.
    if (raw !== null) closeEventStream(ctx, raw);
    trace.setResponse(facts.id, facts.model, facts.reasons);
  }
  return null;
}
