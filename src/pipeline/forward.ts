// Forwarding through the canonical model: one client request (an Exchange) to one target. The request is fitted
// to the target (suffix, clamp, capabilities), built by the provider's codec (which reports what it dropped: the
// x-tollgate-dropped-params header), sent once (Upstream.callOnce), and its answer (whole, or event by event through
// the EventRelay) parsed and rendered back in the client's format. translated.ts (a model) and combo/ (each attempt)
// both forward through here.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import { holdsRawNumbers, markRawNumbers } from '../core/raw-numbers.js';
import type { BuiltRequest, StreamParser, StreamRenderer, WireCodec } from '../wire/codec.js';
import type { UpstreamFailure } from '../routing/failures.js';
import type { Route } from '../routing/resolve.js';
import { AnswerToolEvents, unwrapAnswerTool } from '../wire/answer-tool.js';
import { customToolNames, markCustomCalls, markCustomEvent } from '../wire/custom-tool.js';
import type { CanonicalEvent, CanonicalField, CanonicalRequest, CanonicalResponse } from '../wire/canonical.js';
import { fitCapabilities } from '../wire/capabilities.js';
import { AnswerText, answerOf } from '../wire/estimate.js';
import { finishReasonOf, type RequestTrace } from '../telemetry/tracing.js';
import { classifyTransportError } from '../providers/transport.js';
import type { ClientAbort } from '../providers/upstream.js';
import type { GatewayContext } from './context.js';
import { SentInput, settleCut, settleEstimate, type Outcome } from './outcome.js';
import { EventRelay, type FailureHandling } from './relay.js';
import { markAborted, percentEncoded } from './reply.js';
import { buildFor, callForClient, failWith, notEventStream, notJson, readUpstreamError, relayedText, sendFailure, type ClientCall, type UpstreamCall } from './upstream.js';

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

/** How a request is fitted to its target (fitRequest). */
export interface Fitting {
  /** The model name the answer is shown under (the one the client asked for). */
  readonly model: string;
  /** The thinking level a suffix named; it wins over the request's own. */
  readonly thinking: CanonicalRequest['thinking'];
  readonly stream: boolean;
}

/**
 * Fit a request to its target: the suffix's thinking level wins, max_tokens is clamped to the model's ceiling, and
 * what the model's capabilities exclude is removed (wire/capabilities.ts).
 */
export function fitRequest(req: CanonicalRequest, route: Route, fitting: Fitting): CanonicalRequest {
  const ceiling = route.modelConfig?.max_output_tokens;
  const maxTokens = ceiling !== undefined && req.maxTokens !== undefined ? Math.min(req.maxTokens, ceiling) : req.maxTokens;
  return fitCapabilities({ ...req, model: fitting.model, stream: fitting.stream, maxTokens, thinking: fitting.thinking ?? req.thinking }, route.modelConfig);
}

/** The response header listing the client parameters a translated request did not carry (docs/translation.md). */
export const DROPPED_PARAMS_HEADER = 'x-tollgate-dropped-params';

/**
 * The upstream request for `target`, or the 400 naming the client's parameter when the target cannot carry it
 * without changing the answer's meaning (BuiltRequest.refused).
 */
export function buildUpstream(exchange: Exchange, outbound: WireCodec, canonical: CanonicalRequest, route: Route): BuiltRequest {
  const built = buildFor(outbound, route, canonical);
  // What the translation carries as the client's own objects (a tool's schema) keeps its numbers as written.
  if (holdsRawNumbers(exchange.req.body)) markRawNumbers(built.body);
  if (built.refused !== undefined) {
    const param = canonical.fieldNames?.[built.refused.field] ?? exchange.inbound.codec.paramNames[built.refused.field];
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
  for (const f of [...(canonical.removed ?? []), ...dropped]) out.add(canonical.fieldNames?.[f] ?? names[f]);
  return [...out].sort();
}

/** The longest x-tollgate-dropped-params value, the `(N more)` marker included. */
export const MAX_DROPPED_HEADER = 1024;

/**
 * The x-tollgate-dropped-params value for `params` (client input: any key a body can hold). Each name is
 * percent-encoded past visible ASCII, and for `%`, `,` and spaces (percentEncoded), so the value is always a valid
 * header value and splits back on ', '; names that would take it past MAX_DROPPED_HEADER are left out and counted in
 * a last item `(N more)`, which no encoded name can be (it has a space).
 */
export function droppedHeader(params: readonly string[]): string {
  const names = params.map((p) => percentEncoded(p, ','));
  const all = names.join(', ');
  if (all.length <= MAX_DROPPED_HEADER) return all;
  const room = MAX_DROPPED_HEADER - `, (${names.length} more)`.length;
  let value = '';
  let kept = 0;
  for (const name of names) {
    const next = kept === 0 ? name : `${value}, ${name}`;
    if (next.length > room) break;
    value = next;
    kept++;
  }
  const more = `(${names.length - kept} more)`;
  return kept === 0 ? more : `${value}, ${more}`;
}

/**
 * Tell the client (header, set before the first byte) and the request span which parameters were not carried; the
 * header encodes and bounds the names (droppedHeader), the span keeps them as they came.
 */
export function listDropped(exchange: Pick<Exchange, 'reply' | 'trace'>, params: readonly string[]): void {
  if (params.length > 0) exchange.reply.header(DROPPED_PARAMS_HEADER, droppedHeader(params));
  else exchange.reply.removeHeader(DROPPED_PARAMS_HEADER);
  exchange.trace.droppedParams(params);
}

/** The client's stream renderer for an answer shown under `model`. */
export function rendererFor(exchange: Exchange, model: string): StreamRenderer {
  return exchange.inbound.renderer ? exchange.inbound.renderer(exchange.req, model, exchange.requestId) : exchange.inbound.codec.createStreamRenderer(model);
}

/** One forwarding of an exchange to one target. */
export interface Forwarding {
  /** The target as resolved (its connection is picked here). */
  readonly route: Route;
  /** The request fitted to the target. */
  readonly canonical: CanonicalRequest;
  /** Where this call's outcome is kept (the request's, or the attempt's). */
  readonly outcome: Outcome;
  /** performance.now() when the request (or the attempt) started. */
  readonly t0: number;
  /** 'answer': a failure is answered here; 'return': one before any byte is returned (a combo's next member may answer). */
  readonly failures: FailureHandling;
  /** What to list as not carried, instead of this request's own list (a fusion judge lists its panel's). */
  readonly dropped?: readonly string[];
}

/**
 * One upstream call, answered to the client in its format, under the name of the model that served it. Returns null
 * once the client has its answer (or went away). With `failures: 'return'`, a failure before any byte reached the
 * client is returned instead of sent, and a stream opens only with its first output. With 'answer', failures are
 * answered here (an upstream error status relayed as it came) or thrown as a TollgateError for the handler to answer.
 */
export async function forward(exchange: Exchange, f: Forwarding): Promise<UpstreamFailure | null> {
  const { ctx, reply } = exchange;
  const { outcome, canonical } = f;
  const returnFailure = f.failures === 'return';
  let route: Route;
  try {
    route = await ctx.router.connect(f.route);
  } catch (err) {
    if (!returnFailure || !(err instanceof TollgateError)) throw err;
    outcome.route = f.route;
    return failWith(outcome, err);
  }
  outcome.route = route;
  const outbound = exchange.codecs(route.provider.format);
  const built = buildUpstream(exchange, outbound, canonical, route);
  listDropped(exchange, f.dropped ?? droppedParams(exchange.inbound.codec.paramNames, canonical, built.dropped));
  outcome.sent = new SentInput(() => ({ canonical }));
  let sent: ClientCall | null;
  try {
    sent = await callForClient({ reply, trace: exchange.trace, outcome }, (opts) => ctx.upstream.callOnce(route, canonical, { ...opts, codec: outbound, built, stream: canonical.stream }));
  } catch (err) {
    if (!returnFailure || !(err instanceof TollgateError)) throw err;
    return failWith(outcome, err);
  }
  if (sent === null) return null;
  const { call, clientGone } = sent;
  try {
    // An upstream error status reaches the client with its retry headers; the body is passed as it came.
    const failed = await readUpstreamError(call, outcome);
    if (failed !== null) {
      if (!returnFailure) sendFailure(reply, failed, exchange.requestId);
      return failed;
    }
    if (canonical.stream) return await relayStream(exchange, { ...f, route, outbound, built, call, clientGone });
    const text = await call.res.text();
    outcome.upstreamMs = call.elapsedMs();
    // Calls of the tools the client declared custom come back to it as custom tool calls (wire/custom-tool.ts).
    const answer = markCustomCalls(readAnswer(outbound, text, outcome, { call, answerTool: built.answerTool }), customToolNames(exchange.parsed));
    exchange.trace.setResponse(answer.id, answer.model, [finishReasonOf(answer.stopReason)]);
    call.span?.end(call.res.status, null);
    reply.code(200).header('content-type', 'application/json').send(JSON.stringify(exchange.inbound.codec.renderResponse(answer, route.model)));
    await settleEstimate(outcome, { canonical }, answerOf(answer.content));
    return null;
  } catch (err) {
    if (clientGone.aborted) {
      markAborted(outcome, reply);
      await settleCut(outcome, { canonical }, call.res.status);
      return null;
    }
    const e = err instanceof TollgateError ? err : classifyTransportError(err);
    if (returnFailure) return failWith(outcome, e);
    throw e;
  } finally {
    sent.release();
  }
}

/** A streamed answer, through the EventRelay; the usage it did not report is estimated once the client has it all. */
async function relayStream(
  exchange: Exchange, f: Forwarding & { readonly route: Route; readonly outbound: WireCodec; readonly built: BuiltRequest; readonly call: UpstreamCall; readonly clientGone: ClientAbort },
): Promise<UpstreamFailure | null> {
  const { call, outcome } = f;
  const refused = notEventStream(call, outcome, (json) => f.outbound.parseResponse(json).usage);
  if (refused !== null) throw await refused;
  const answer = new AnswerText();
  const relay = new EventRelay({
    ctx: exchange.ctx, reply: exchange.reply, outcome, trace: exchange.trace, answer, clientGone: f.clientGone, t0: f.t0, failures: f.failures,
    call,
    parser: answerToolParser(f.outbound.createStreamParser(), f.built.answerTool, customToolNames(exchange.parsed)), renderer: rendererFor(exchange, f.route.model),
  });
  const failed = await relay.run(call.res);
  outcome.upstreamMs = call.elapsedMs();
  call.span?.end(call.res.status, outcome.status === 'failure' ? outcome.errorType : null);
  // After the client has its whole stream: what the upstream did not report is estimated.
  if (failed === null) await settleEstimate(outcome, { canonical: f.canonical }, answer);
  return failed;
}

/**
 * The provider's stream parser, with the calls of a response-format tool (`answerTool`) turned into text and the
 * calls of the client's custom tools (`custom`) marked custom.
 */
function answerToolParser(inner: StreamParser, answerTool: string | undefined, custom: ReadonlySet<string>): StreamParser {
  if (answerTool === undefined && custom.size === 0) return inner;
  const events = answerTool === undefined ? null : new AnswerToolEvents(answerTool);
  const map = (es: CanonicalEvent[]): CanonicalEvent[] => es.flatMap((e) => (events === null ? e : events.map(e)) ?? []).map((e) => markCustomEvent(e, custom));
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
export function readAnswer(outbound: WireCodec, text: string, outcome: Outcome, from: { readonly call: UpstreamCall; readonly answerTool: string | undefined }): CanonicalResponse {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw notJson(from.call);
  }
  let parsed: CanonicalResponse;
  try {
    parsed = outbound.parseResponse(json);
  } catch (err) {
    // An error object in a 200 ("Anthropic answered with an error: ..."): the upstream's words, its credentials out.
    throw err instanceof TollgateError ? new TollgateError(err.code, relayedText(from.call, err.message), { cause: err.cause }) : err;
  }
  const answer = from.answerTool === undefined ? parsed : unwrapAnswerTool(parsed, from.answerTool);
  if (answer.usage) {
    outcome.usage = answer.usage;
    outcome.usageSource = 'reported';
  }
  return answer;
}
