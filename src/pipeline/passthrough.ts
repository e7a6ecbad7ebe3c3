// Same-format passthrough: a client speaking its provider's own format (Anthropic, Responses, Gemini; OpenAI Chat has
// its fast path in chat.ts). The client's parsed body goes upstream with only the descriptor's rewrites (model,
// thinking suffix, max-tokens clamp, capability stripping: src/wire/same-format.ts), with the client's protocol
// headers (forward-headers.ts). The answer goes back byte for byte, JSON or SSE, while usage, time to first token and
// the finish are read from it as it passes, by the format's own codec, as the translated path reads them. One usage
// record per request, the same fields, span and metrics as translated.ts.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import { isObj, type Json, type SameFormat, type SameFormatCall } from '../wire/same-format.js';
import type { UpstreamRequest } from '../wire/types.js';
import { autoSwitch } from '../routing/auto-switch.js';
import type { UpstreamFailure } from '../routing/failures.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import type { CanonicalEvent } from '../wire/canonical.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { finishReasonOf, type RequestTrace } from '../telemetry/tracing.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import type { Usage } from '../ledger/types.js';
import { AnswerText, answerOf } from '../wire/estimate.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import { type ClientAbort, type UpstreamResponse } from '../providers/upstream.js';
import { forwardedHeaders } from '../providers/forward-headers.js';
import { StreamFacts, begin, openRequest, closeEventStream, finish, markAborted, modelHeader, openEventStream, settleEstimate, write, type Outcome, type RequestMeta } from './outcome.js';
import { SseParser, type SseFrame } from '../wire/sse.js';
import { callUpstream, readUpstreamError, sendFailure, settleFailure, settleRoute, failRequest } from './upstream-call.js';

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
 * capabilities exclude. Nothing else is touched.
 */
export function rewriteBody(f: SameFormat, body: Json, route: Route, thinking: ReturnType<typeof parseThinkingSuffix>['thinking']): Json {
  const m = route.modelConfig;
  f.setModel(body, route.modelId);
  const ceiling = m?.max_output_tokens;
  const asked = f.getMaxTokens(body);
  if (ceiling !== undefined && asked !== undefined && asked > ceiling) f.setMaxTokens(body, ceiling);
  if (thinking !== undefined) f.applyThinking(body, thinking, m);
  if (m !== null && m.capabilities.length > 0) f.stripExcluded(body, new Set(m.capabilities));
  return body;
}

/** Headers upstream: the format's defaults < the client's protocol headers < the config's headers < framing and key. */
export function upstreamHeaders(f: SameFormat, req: FastifyRequest, route: Route, stream: boolean): Record<string, string> {
  const h: Record<string, string> = { ...f.defaultHeaders, ...forwardedHeaders(req.headers) };
  for (const [k, v] of Object.entries(route.provider.headers)) h[k.toLowerCase()] = v;
  h['content-type'] = 'application/json';
  h.accept = stream ? 'text/event-stream' : 'application/json';
  return Object.assign(h, f.authHeaders(route.provider));
}

export async function handlePassthrough(ctx: GatewayContext, inbound: PassthroughInbound, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { t0, startedAt, requestId, trace, o } = openRequest(ctx, req, reply, inbound.endpoint);
  const cfg = ctx.config.current;
  let requestedModel = '';
  let stream = false;
  const meta = (): RequestMeta => ({ endpoint: inbound.endpoint, requestId, startedAt, t0, requestedModel, stream });
  begin(ctx, req, o, meta);
  try {
    if (!isObj(req.body)) throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'request body must be a JSON object');
    const { model: asked, call } = inbound.target(req);
    requestedModel = parseThinkingSuffix(asked).model.slice(0, MAX_REQUESTED_MODEL);
    stream = call.stream;
    o.streamed.expected = inbound.format.getMaxTokens(req.body) ?? null;
    reply.header('x-tollgate-requested-model', modelHeader(requestedModel));
    const target = autoSwitch(cfg, asked, ctx.router.budget);
    if (target.switched) {
      o.autoSwitched = true;
      reply.header('x-tollgate-auto-switched', 'true').header('x-tollgate-original-model', modelHeader(requestedModel));
    }
    const named = parseThinkingSuffix(target.model);
    o.route = resolveModel(cfg, named.model);
    trace.routed(o.route.model, o.route.providerId, o.route.modelId);
    o.route = await ctx.router.connect(o.route);
    const f = inbound.format;
    const upReq: UpstreamRequest = {
      path: f.upstreamPath(o.route.provider, o.route.modelId, call),
      headers: upstreamHeaders(f, req, o.route, stream),
      body: rewriteBody(f, req.body, o.route, named.thinking),
    };
    settleRoute(ctx, o, await forward(ctx, f, o.route, upReq, { body: upReq.body, stream, trace, reply, o, t0, requestId }));
  } catch (err) {
    failRequest(ctx, req, reply, o, err, { requestId, settleRoute: true });
  } finally {
    finish(ctx, req, trace, o, meta());
  }
}

interface Pass {
  /** The body sent upstream: what an estimate of the input reads, when the upstream reports no usage. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  readonly trace: RequestTrace;
  readonly reply: FastifyReply;
  readonly o: Outcome;
  readonly t0: number;
  readonly requestId: string;
}

/** The upstream call; its answer goes to the client as it came. Returns the failure when the upstream refused. */
async function forward(ctx: GatewayContext, f: SameFormat, route: Route, upReq: UpstreamRequest, p: Pass): Promise<UpstreamFailure | null> {
  const { reply, o } = p;
  const call = await callUpstream(ctx, route, upReq, p.stream, p.trace, reply, o);
  if (call === null) return null;
  const { res } = call;
  try {
    const failed = await readUpstreamError(call, o);
    if (failed !== null) {
      sendFailure(reply, failed, p.requestId);
      return failed;
    }
    const type = String(res.headers['content-type'] ?? '');
    if (type.startsWith('text/event-stream')) {
      const answer = new AnswerText();
      await pipeStream(ctx, f, res, call.gone, p, answer);
      call.stamp();
      call.span.end(res.status, o.status === 'failure' ? o.errorType : null);
      // After the client has its whole stream: what the upstream did not report is estimated.
      await estimate(f, p, answer);
      return null;
    }
    const parts: Buffer[] = [];
    for await (const c of res.body) parts.push(Buffer.from(c as Uint8Array));
    const bytes = Buffer.concat(parts);
    call.stamp();
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      call.span.end(res.status, 'invalid_json');
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider returned a body that is not JSON');
    }
    const facts = answerFacts(f, json);
    if (facts.usage !== null) {
      o.usage = facts.usage;
      o.usageSource = 'reported';
    }
    p.trace.setResponse(facts.id, facts.model, facts.reasons);
    call.span.end(res.status, null);
    reply.code(200).header('content-type', type || 'application/json').send(bytes);
    if (facts.usage === null) await estimate(f, p, facts.answer);
    return null;
  } catch (err) {
    if (err instanceof TollgateError && !call.gone.aborted) throw err;
    settleFailure(err, call, reply, o);
    return null;
  } finally {
    call.release();
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

/** Estimate what the upstream did not report, from the body sent (read as the format's canonical request). */
async function estimate(f: SameFormat, p: Pass, answer: AnswerText): Promise<void> {
  if (p.o.usageSource === 'reported' && p.o.usage.input !== null && p.o.usage.output !== null) return;
  let canonical;
  try {
    canonical = f.codec.parseRequest(p.body);
  } catch {
    return; // a body the codec cannot read (the upstream took it): its usage stays as reported
  }
  await settleEstimate(p.o, { canonical }, answer);
}

/**
 * Upstream SSE to the client unchanged, chunk by chunk as received; the same bytes are framed and read by the
 * codec's stream parser for usage, the first output and the finish. A stream the upstream breaks off gets the
 * format's terminal error appended, so the client's SDK raises rather than taking a cut answer as whole.
 */
async function pipeStream(ctx: GatewayContext, f: SameFormat, res: UpstreamResponse, gone: ClientAbort, p: Pass, answer: AnswerText): Promise<void> {
  const { reply, o } = p;
  const raw = openEventStream(reply);
  const sse = new SseParser();
  const parser = f.codec.createStreamParser();
  let reading = true;
  const facts = new StreamFacts(o, answer, p.t0);
  const onEvent = (e: CanonicalEvent): void => facts.observe(e);
  // Reading never changes what the client gets: a frame the parser cannot read stops the reading, not the bytes.
  let events = 0;
  const read = (frames: readonly SseFrame[]): void => {
    events += frames.length;
    if (!reading) return;
    try {
      for (const fr of frames) for (const e of parser.frame(fr)) onEvent(e);
    } catch {
      reading = false;
      o.status = 'failure';
      o.errorType = 'TOLLGATE_ERR_UPSTREAM_PROTOCOL';
    }
  };
  try {
    for await (const chunk of res.body) {
      read(sse.push(chunk as Uint8Array));
      await write(raw, chunk as Uint8Array);
    }
    read(sse.end());
    if (reading) for (const e of parser.end()) onEvent(e);
    if (reading && !parser.terminated && o.status === 'success') {
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
    }
  } catch (err) {
    if (gone.aborted) {
      markAborted(o, reply);
    } else {
      const e = err instanceof TollgateError ? err : classifyTransportError(err);
      o.status = 'failure';
      o.errorType = e.code;
      await write(raw, f.terminalError(e.code, e.message, { id: facts.id, model: facts.model, events }));
    }
  } finally {
    closeEventStream(ctx, raw);
    p.trace.setResponse(facts.id, facts.model, facts.reasons);
  }
}
