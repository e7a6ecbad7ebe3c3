// Same-format passthrough: a client speaking its provider's own format (Anthropic, Responses, Gemini; OpenAI Chat has
// its fast path in chat.ts). The client's parsed body goes upstream with only the descriptor's rewrites (model,
// thinking suffix, max-tokens clamp, capability stripping: src/wire/same-format.ts), with the client's protocol
// headers (forward-headers.ts). The answer goes back byte for byte, JSON or SSE (a stream request's must be an event
// stream, but for what SameFormat.expectsEventStream excepts, or it is refused), while usage, time to first token and
// the finish are read from it as it passes, by the format's own codec, as the translated path reads them. One usage
// record per request, the same fields, span and metrics as translated.ts.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import { isObj, type Json, type SameFormat, type SameFormatCall } from '../wire/same-format.js';
import type { UpstreamRequest } from '../wire/types.js';
import type { Target } from '../routing/auto-switch.js';
import type { UpstreamFailure } from '../routing/failures.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import type { CanonicalEvent } from '../wire/canonical.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { finishReasonOf } from '../telemetry/tracing.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import { knowsInput, knowsOutput, type Usage } from '../ledger/types.js';
import { AnswerText, answerOf } from '../wire/estimate.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import type { ClientAbort, UpstreamResponse } from '../providers/upstream.js';
import { answerHeaders, forwardedHeaders } from '../providers/forward-headers.js';
import { SentInput, StreamFacts, accepted, settleEstimate } from './outcome.js';
import { EventStreamOut, bodyEnded, markAborted, openEventStream, stallOf } from './reply.js';
import { SseParser, WholeFrames, type SseFrame } from '../wire/sse.js';
import { reportToRouter, serveRequest, type ClientRequest } from './request.js';
import { answeredEmpty, callForClient, errorAnswer, notEventStream, notJson, readUpstreamError, relayedText, sendFailure, type UpstreamCall } from './upstream.js';
import { listDropped } from './forward.js';

/** One inbound endpoint served by passthrough: its usage-row name, its format, where model and call come from. */
export interface PassthroughInbound {
  readonly endpoint: string;
  readonly format: SameFormat;
  /** The model as the client named it (suffix included) and what it asks of the upstream. */
  target(req: FastifyRequest): { model: string; call: SameFormatCall };
}

/** The model named in a JSON body, or undefined (the translated path then answers the malformed request). */
export function bodyModel(body: unknown): string | undefined {
  const m = isObj(body) ? body.model : undefined;
  return typeof m === 'string' && m !== '' ? m : undefined;
}

/** Model and streaming from the body (Anthropic, Responses). */
export function bodyTarget(req: FastifyRequest): { model: string; call: SameFormatCall } {
  const body = req.body as Json;
  return { model: bodyModel(body) ?? '', call: { stream: body.stream === true, action: '', alt: '' } };
}

/**
 * Apply the documented rewrites to the client's body (its own parsed copy): the model, the max-tokens clamp (the
 * model's max_output_tokens), the suffix's thinking level on the format's parameter, and what the model's listed
 * capabilities exclude. Nothing else is touched. Returns the client parameters removed (or, for a thinking level
 * the model cannot take, not set), sorted: listed to the client as on the translated path.
 */
export function rewriteBody(f: SameFormat, body: Json, route: Route, thinking: ReturnType<typeof parseThinkingSuffix>['thinking']): string[] {
  const m = route.modelConfig;
  f.setModel(body, route.modelId);
  const ceiling = m?.max_output_tokens;
  const asked = f.getMaxTokens(body);
  if (ceiling !== undefined && asked !== undefined && asked > ceiling) f.setMaxTokens(body, ceiling);
  const removed = thinking === undefined ? [] : f.applyThinking(body, thinking, m);
  if (m !== null && m.capabilities.length > 0) removed.push(...f.stripExcluded(body, new Set(m.capabilities)));
  return removed.length < 2 ? removed : [...new Set(removed)].sort();
}

/** Headers upstream: the format's defaults < the client's protocol headers < the config's headers < framing and key. */
export function upstreamHeaders(f: SameFormat, req: FastifyRequest, route: Route, stream: boolean): Record<string, string> {
  const h: Record<string, string> = { ...f.defaultHeaders, ...forwardedHeaders(req.headers) };
  for (const [k, v] of Object.entries(route.provider.headers)) h[k.toLowerCase()] = v;
  h['content-type'] = 'application/json';
  h.accept = stream ? 'text/event-stream' : 'application/json';
  return Object.assign(h, f.authHeaders(route.provider));
}

/** How a request comes to the passthrough: the endpoint it arrived on, and the route's auto-switch answer. */
export interface PassthroughRoute {
  readonly inbound: PassthroughInbound;
  readonly target: Target;
}

export function handlePassthrough(ctx: GatewayContext, route: PassthroughRoute, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  return serveRequest(ctx, req, reply, route.inbound.endpoint, (request) => passThrough(request, route));
}

async function passThrough(request: ClientRequest, route: PassthroughRoute): Promise<void> {
  const { ctx, req, outcome } = request;
  if (!isObj(req.body)) throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'request body must be a JSON object');
  const f = route.inbound.format;
  const { model: asked, call } = route.inbound.target(req);
  request.named(parseThinkingSuffix(asked).model.slice(0, MAX_REQUESTED_MODEL), call.stream);
  outcome.streamed.expected = f.getMaxTokens(req.body) ?? null;
  request.switchedTo(route.target);
  const named = parseThinkingSuffix(route.target.model);
  outcome.route = resolveModel(ctx.config.current, named.model);
  request.trace.routed(outcome.route.model, outcome.route.providerId, outcome.route.modelId);
  outcome.route = await ctx.router.connect(outcome.route);
  const removed = rewriteBody(f, req.body, outcome.route, named.thinking);
  if (removed.length > 0) listDropped(request, removed);
  const eventStream = f.expectsEventStream(call);
  const upstreamRequest: UpstreamRequest = {
    path: f.upstreamPath(outcome.route.provider, outcome.route.modelId, call),
    // Gemini's streamGenerateContent without alt=sse answers JSON: it is asked for JSON (expectsEventStream).
    headers: upstreamHeaders(f, req, outcome.route, eventStream),
    body: req.body,
  };
  reportToRouter(ctx, outcome, await forwardSameFormat(request, { format: f, route: outcome.route, upstreamRequest, eventStream }));
}

/** One same-format forwarding: the format, the connected route, the request as it goes upstream. */
interface SameFormatCallSpec {
  readonly format: SameFormat;
  readonly route: Route;
  readonly upstreamRequest: UpstreamRequest;
  /** The answer must be an event stream (SameFormat.expectsEventStream): a 200 that is not one is refused. */
  readonly eventStream: boolean;
}

/** The upstream call; its answer goes to the client as it came. Returns the failure when the upstream refused. */
async function forwardSameFormat(request: ClientRequest, spec: SameFormatCallSpec): Promise<UpstreamFailure | null> {
  const { ctx, reply, outcome } = request;
  const { format: f, upstreamRequest } = spec;
  const stream = request.facts.stream;
  // The body sent, read as the format's canonical request only if the live monitor asks for its input's estimate.
  outcome.sent = new SentInput(() => ({ canonical: f.codec.parseRequest(upstreamRequest.body) }));
  const sent = await callForClient(request, (opts) => ctx.upstream.send(spec.route, upstreamRequest, { ...opts, stream }));
  if (sent === null) return null;
  const { call, clientGone } = sent;
  const { res } = call;
  const passed = answerHeaders(res.headers);
  if (passed !== null) reply.headers(passed);
  // The body sent: what an estimate of the input reads, when the upstream reports no usage.
  const sentBody = upstreamRequest.body;
  try {
    const failed = await readUpstreamError(call, outcome);
    if (failed !== null) {
      sendFailure(reply, failed, request.requestId);
      return failed;
    }
    if (answeredEmpty(call, outcome, reply)) return null;
    // A stream request answered with JSON (or a proxy's HTML page) is refused before any byte, as on every path.
    const refused = spec.eventStream ? notEventStream(call, outcome, (json) => answerFacts(f, json).usage) : null;
    if (refused !== null) throw await refused;
    const type = String(res.headers['content-type'] ?? '');
    if (spec.eventStream || type.startsWith('text/event-stream')) {
      const answer = new AnswerText();
      await relaySameFormat({ request, format: f, res, clientGone, answer, call });
      outcome.upstreamMs = call.elapsedMs();
      call.span?.end(res.status, outcome.status === 'failure' ? outcome.errorType : null);
      // After the client has its whole stream: what the upstream did not report is estimated.
      await estimate(request, f, sentBody, answer);
      return null;
    }
    const bytes = await res.bytes();
    outcome.upstreamMs = call.elapsedMs();
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw notJson(call);
    }
    const failed200 = errorAnswer(call, json);
    if (failed200 !== null) throw failed200;
    const facts = answerFacts(f, json);
    if (facts.usage !== null) {
      outcome.usage = facts.usage;
      outcome.usageSource = 'reported';
    }
    request.trace.setResponse(facts.id, facts.model, facts.reasons);
    call.span?.end(res.status, null);
    reply.code(res.status).header('content-type', type || 'application/json').send(bytes);
    await estimate(request, f, sentBody, facts.answer);
    return null;
  } catch (err) {
    if (clientGone.aborted) {
      markAborted(outcome, reply);
      // The input of a whole answer the client left after its 2xx came, read from the body sent (settleCut's rule).
      if (accepted(res.status)) await estimate(request, f, sentBody, new AnswerText());
      return null;
    }
    throw err instanceof TollgateError ? err : classifyTransportError(err);
  } finally {
    sent.release();
  }
}

/** What a whole answer says: read by the codec; an answer it cannot parse still gives its usage. */
function answerFacts(f: SameFormat, json: unknown): { usage: Usage | null; id: string | null; model: string | null; reasons: string[]; answer: AnswerText } {
  try {
    const a = f.codec.parseResponse(json);
    return { usage: a.usage, id: a.id || null, model: a.model || null, reasons: [finishReasonOf(a.stopReason)], answer: answerOf(a.content) };
  } catch {
    return { usage: f.usageOf(json), id: null, model: null, reasons: [], answer: new AnswerText() };
  }
}

/**
 * Estimate what the upstream did not report (the one rule, settleEstimate), from the body sent read as the format's
 * canonical request; a usage reported whole needs no reading of the body.
 */
async function estimate(request: ClientRequest, f: SameFormat, sent: Readonly<Record<string, unknown>>, answer: AnswerText): Promise<void> {
  const { outcome } = request;
  if (knowsInput(outcome.usage) && knowsOutput(outcome.usage)) return;
  let canonical;
  try {
    canonical = f.codec.parseRequest(sent);
  } catch {
    return; // a body the codec cannot read (the upstream took it): its usage stays as reported
  }
  await settleEstimate(outcome, { canonical }, answer);
}

/** What the passthrough's stream relay needs. */
interface SameFormatStream {
  readonly request: ClientRequest;
  readonly format: SameFormat;
  readonly res: UpstreamResponse;
  readonly clientGone: ClientAbort;
  readonly answer: AnswerText;
  /** The call: a chunk that ends an error event goes with its credentials out (relayedText). */
  readonly call: UpstreamCall;
}

/** A chunk's text with the call's credentials out, or the chunk itself when it quotes none (its bytes untouched). */
function redacted(bytes: Uint8Array, call: UpstreamCall): Uint8Array | string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const out = relayedText(call, text);
  return out === text ? bytes : out;
}

/**
 * Upstream SSE to the client unchanged, as received up to each read's last whole frame; the same bytes are framed
 * and read by the codec's stream parser for usage, the first output and the finish. A stream the upstream breaks off
 * gets the format's terminal error appended, so the client's SDK raises rather than taking a cut answer as whole.
 */
async function relaySameFormat(s: SameFormatStream): Promise<void> {
  const { request, format: f } = s;
  const { reply, outcome } = request;
  const raw = openEventStream(reply, stallOf(request.outcome.route), s.res.status);
  const sse = new SseParser();
  const parser = f.codec.createStreamParser();
  let reading = true;
  const facts = new StreamFacts(outcome, s.answer, request.t0);
  const onEvent = (e: CanonicalEvent): void => facts.observe(e);
  // Reading never changes what the client gets (a frame the parser cannot read stops the reading, not the bytes), but
  // for bytes that end an error event: their text goes with the call's credentials out (relayedText), as an error
  // body does; the bytes go whole frames at a time, so the error event is all in them.
  let events = 0;
  const read = (frames: readonly SseFrame[]): boolean => {
    events += frames.length;
    if (!reading) return false;
    let error = false;
    try {
      for (const fr of frames) {
        for (const e of parser.frame(fr)) {
          if (e.type === 'error') error = true;
          onEvent(e);
        }
      }
    } catch {
      reading = false;
      outcome.status = 'failure';
      outcome.errorType = 'TOLLGATE_ERR_UPSTREAM_PROTOCOL';
    }
    return error;
  };
  // Forwarded up to the last whole frame: a stream cut mid-frame leaves the client on a frame boundary, where the
  // terminal error follows (an SDK would otherwise parse the cut frame and the error glued to it as one).
  const whole = new WholeFrames();
  // The last read's bytes go in the same write as the stream's end (reply.ts).
  const client = new EventStreamOut(raw);
  try {
    for await (const chunk of s.res.body) {
      const error = read(sse.push(chunk as Uint8Array));
      const out = whole.push(chunk as Uint8Array);
      if (out !== null) await client.write(error ? redacted(out, s.call) : out, bodyEnded(s.res.body));
    }
    const error = read(sse.end());
    if (reading) for (const e of parser.end()) onEvent(e);
    if (reading && !parser.terminated && outcome.status === 'success') {
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
    // The stream finished: its last bytes (a final frame without its blank line) go as they came.
    const rest = whole.rest();
    if (rest.length > 0) await client.write(error ? redacted(rest, s.call) : rest, true);
  } catch (err) {
    if (s.clientGone.aborted) {
      markAborted(outcome, reply);
    } else {
      const e = err instanceof TollgateError ? err : classifyTransportError(err);
      outcome.status = 'failure';
      outcome.errorType = e.code;
      await client.write(f.terminalError(e.code, e.message, { id: facts.id, model: facts.model, events }), true);
    }
  } finally {
    client.close({ closing: request.ctx.closing() });
    request.trace.setResponse(facts.id, facts.model, facts.reasons);
  }
}
