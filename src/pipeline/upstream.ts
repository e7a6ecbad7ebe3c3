// The one upstream call. Every request the gateway makes of a provider goes out through `Upstream.send`: a client's
// request forwarded (fast path, passthrough, translated, each combo attempt and fusion member), a keep-alive ping and
// a token count. It sends on the route's connection pool, carries the trace headers and a child span when the call
// belongs to a client request, times the call, and turns a transport failure into a coded error. `callOnce` is the
// same call for a canonical request: the provider's codec builds it first.

import { performance } from 'node:perf_hooks';
import type { FastifyReply } from 'fastify';
import { TollgateError, errorBody } from '../core/errors.js';
import type { BuiltRequest, Target, WireCodec } from '../wire/codec.js';
import type { CanonicalRequest } from '../wire/canonical.js';
import type { UpstreamRequest } from '../wire/types.js';
import { dropsGrammar } from '../wire/custom-tool.js';
import { errorFailure, httpFailure, type UpstreamFailure } from '../routing/failures.js';
import type { Route } from '../routing/resolve.js';
import type { RequestTrace, UpstreamSpan } from '../telemetry/tracing.js';
import type { Dispatcher } from '../providers/transport.js';
import { classifyTransportError } from '../providers/transport.js';
import { ClientAbort, type UpstreamResponse } from '../providers/upstream.js';
import { discard } from '../providers/answer-body.js';
import type { Outcome } from './outcome.js';
import type { Usage } from '../ledger/types.js';
import { FORWARDED_ERROR_HEADERS, markAborted, pickHeaders } from './reply.js';
import { CREDENTIAL_NAME } from '../config/redact.js';
import { withoutSecrets } from '../core/secrets.js';

export interface CallOptions {
  /** Aborts the call (the client went away, a fusion deadline, shutdown). */
  readonly signal: ClientAbort;
  /** The answer is an event stream (no body timeout between headers and the last byte, only the stall timeout). */
  readonly stream: boolean;
  /** The client request the call belongs to: the call gets a child span and carries the trace headers. */
  readonly trace?: RequestTrace;
  /** Told the child span as soon as it exists (so the record can close it whatever happens to the call). */
  readonly onSpan?: (span: UpstreamSpan) => void;
  /** Told once the request is handed to the upstream (SendOptions.onDispatch): the record's `dispatched`. */
  readonly onDispatch?: () => void;
}

/** A call the upstream answered (any status): its response, its span, and the time since it was sent. */
export interface UpstreamCall {
  readonly res: UpstreamResponse;
  /** The call's child span (null for a call outside a client request: a keep-alive ping). */
  readonly span: UpstreamSpan | null;
  /** Milliseconds since the call was sent. */
  elapsedMs(): number;
  /** The request as sent and the provider's key header: what `relayedText` keeps the call's credentials out of. */
  readonly sent?: { readonly request: UpstreamRequest; readonly authHeader: string | undefined };
}

/**
 * The gateway's way out to providers: every upstream request is sent by `send` (or `callOnce`, which builds it from a
 * canonical request first). Built once by app.ts over the dispatcher (the transports).
 */
export class Upstream {
  readonly #dispatcher: Dispatcher;

  constructor(dispatcher: Dispatcher) {
    this.#dispatcher = dispatcher;
  }

  /**
   * Send `request` to the route's connection. A transport failure is thrown as a coded error (its span ended with
   * the code); when `signal` had aborted, what was thrown is passed on and the span ends as `aborted`, for the
   * caller to record as it sees fit.
   */
  async send(route: Route, request: UpstreamRequest, opts: CallOptions): Promise<UpstreamCall> {
    const child = opts.trace?.upstream(route.provider.base_url, request.path, route.providerId) ?? null;
    if (child !== null) opts.onSpan?.(child.span);
    const sentAt = performance.now();
    try {
      // One pool per connection: a region- or cluster-specific key has its own origin.
      const res = await this.#dispatcher.send(route.connection?.id ?? route.providerId, route.provider, request, {
        stream: opts.stream, signal: opts.signal, ...(child === null ? {} : { extraHeaders: child.headers }),
        ...(opts.onDispatch === undefined ? {} : { onDispatch: opts.onDispatch }),
      });
      return { res, span: child?.span ?? null, elapsedMs: () => performance.now() - sentAt, sent: { request, authHeader: route.provider.auth.header } };
    } catch (err) {
      if (opts.signal.aborted) {
        child?.span.end(null, 'aborted');
        throw err;
      }
      const e = classifyTransportError(err);
      child?.span.end(null, e.code);
      throw e;
    }
  }

  /**
   * `canonical` to the route's provider, built by its codec (`built`, when the caller built it already to check what
   * it drops): the one call of the translated path, of fusion members, keep-alive pings and Anthropic token counting.
   * `reshape` adjusts the built request (count_tokens' path and fields).
   */
  async callOnce(route: Route, canonical: CanonicalRequest, opts: CallOnceOptions): Promise<UpstreamCall & { readonly built: BuiltRequest }> {
    const built = opts.built ?? buildFor(opts.codec, route, canonical);
    const call = await this.send(route, opts.reshape ? opts.reshape(built) : built, opts);
    return { ...call, built };
  }
}

export interface CallOnceOptions extends CallOptions {
  /** The codec of the route's provider. */
  readonly codec: WireCodec;
  readonly built?: BuiltRequest;
  readonly reshape?: (built: BuiltRequest) => UpstreamRequest;
}

/** The request `codec` builds for the route's model; the caller refuses it if the codec did (BuiltRequest.refused). */
export function buildFor(codec: WireCodec, route: Route, canonical: CanonicalRequest): BuiltRequest {
  const target: Target = { providerId: route.providerId, provider: route.provider, modelId: route.modelId, model: route.modelConfig };
  const built = codec.buildRequest(canonical, target);
  // A custom tool's grammar goes only to OpenAI's APIs; elsewhere its definition is a description (wire/custom-tool.ts).
  return dropsGrammar(canonical, codec.format) ? { ...built, dropped: [...built.dropped, 'toolGrammar'] } : built;
}

/** An upstream call made for a client that is watched: `clientGone` aborts when it leaves; `release` stops watching. */
export interface ClientCall {
  readonly call: UpstreamCall;
  readonly clientGone: ClientAbort;
  release(): void;
}

/** Who a client's call is for: its reply (watched), its trace (the child span), its outcome (span and timing). */
export interface CallFor {
  readonly reply: FastifyReply;
  readonly trace: RequestTrace;
  readonly outcome: Outcome;
}

/**
 * Make an upstream call for a client: aborted when the client leaves, its span kept on the outcome from the start.
 * Null when the client left before the answer began (the outcome is then `aborted`); a transport failure is thrown.
 */
export async function callForClient(client: CallFor, send: (opts: Pick<CallOptions, 'signal' | 'trace' | 'onSpan' | 'onDispatch'>) => Promise<UpstreamCall>): Promise<ClientCall | null> {
  const { outcome } = client;
  const watch = watchClient(client.reply);
  const sentAt = performance.now();
  try {
    const call = await send({ signal: watch.signal, trace: client.trace, onSpan: (span) => (outcome.span = span), onDispatch: () => (outcome.dispatched = true) });
    return { call, clientGone: watch.signal, release: watch.release };
  } catch (err) {
    watch.release();
    outcome.upstreamMs = performance.now() - sentAt;
    if (!watch.signal.aborted) throw err;
    markAborted(outcome, client.reply);
    return null;
  }
}

/** Watch the client's connection: `signal` aborts when it closes before its answer is finished. */
export function watchClient(reply: FastifyReply): { readonly signal: ClientAbort; release(): void } {
  const signal = new ClientAbort();
  const onClose = () => {
    if (!reply.raw.writableFinished) signal.abort();
  };
  reply.raw.on('close', onClose);
  return { signal, release: () => reply.raw.off('close', onClose) };
}

/**
 * The failure when the upstream answered with an error status (its body read, the outcome a failure); else null. A
 * status that is neither an answer nor an error (a redirect: the gateway follows none, it would send the key
 * elsewhere; or a number past 599) is the upstream's protocol failing: thrown, the body left unread.
 */
export async function readUpstreamError(call: UpstreamCall, outcome: Outcome): Promise<UpstreamFailure | null> {
  const { res } = call;
  if (res.status >= 200 && res.status < 300) return null;
  if (res.status < 400 || res.status > 599) {
    discard(res.body);
    call.span?.end(res.status, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL');
    const what = res.status >= 300 && res.status < 400 ? `a redirect (${res.status}), which the gateway does not follow: is the provider's base_url right?` : `status ${res.status}, which is not an answer`;
    throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider answered ${what}`);
  }
  const text = relayedText(call, await res.text());
  outcome.upstreamMs = call.elapsedMs();
  outcome.status = 'failure';
  outcome.httpStatus = res.status;
  outcome.errorType = String(res.status);
  call.span?.end(res.status, String(res.status));
  return httpFailure(res.status, pickHeaders(res.headers, FORWARDED_ERROR_HEADERS), text);
}

/**
 * A same-format call's 2xx, as the client will get it: its status is the row's. A 204 or 205 (an answer without a
 * body, by definition) is answered at once with that status and no body: a success with no usage reported and none
 * estimated, nothing having been generated (docs/translation.md). True when it was one (the reply is sent).
 */
export function answeredEmpty(call: UpstreamCall, outcome: Outcome, reply: FastifyReply): boolean {
  const { res } = call;
  outcome.httpStatus = res.status;
  if (res.status !== 204 && res.status !== 205) return false;
  discard(res.body);
  outcome.upstreamMs = call.elapsedMs();
  call.span?.end(res.status, null);
  reply.code(res.status).send();
  return true;
}

/** Where a call carries its credentials (and a provider's own `auth.header`). */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'x-api-key', 'x-goog-api-key', 'api-key']);

/**
 * An upstream's error body as the client may see it: every credential the call sent replaced by `[REDACTED]`: the
 * provider's key or OAuth token in its usual headers or `auth.header`, any header the provider's `headers` add whose
 * name names a credential (`X-Functions-Key`, `Ocp-Apim-Subscription-Key`: the rule the config export redacts by,
 * src/config/redact.ts). Each in the forms an answer may quote it: as sent, JSON-escaped (`\/` for `/` included, as PHP writes it)
 * and percent-encoded. An upstream that quotes the key it was given ("Incorrect API key provided: Bearer sk-...", a
 * self-hosted server echoing its headers) would otherwise hand it to any client, a `user` key's included.
 */
export function relayedText(call: UpstreamCall, text: string): string {
  return call.sent === undefined ? text : withoutSecrets(text, sentSecrets(call.sent.request, call.sent.authHeader?.toLowerCase()));
}

/**
 * The credentials a request carried: its credential headers' values, without an auth scheme word. (Its path carries
 * none: a base_url's query is not sent, src/wire/endpoint.ts, and of a client's query only Gemini's `alt` is.)
 */
function sentSecrets(request: UpstreamRequest, custom: string | undefined): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    const n = name.toLowerCase();
    if (CREDENTIAL_HEADERS.has(n) || n === custom || CREDENTIAL_NAME.test(n)) out.push(value.replace(/^(Bearer|Basic|Token)\s+/i, ''));
  }
  return out;
}

/**
 * Answer the client with a failure: the upstream's status, body and retry headers as they came, or our error. False
 * when the client has its answer's head already (nothing sent).
 */
export function sendFailure(reply: FastifyReply, failure: UpstreamFailure, requestId: string): boolean {
  if (reply.sent || reply.raw.headersSent) return false;
  if (failure.body !== null) reply.code(failure.status).headers(failure.headers).send(failure.body);
  else reply.code(failure.status).headers(failure.headers).send(errorBody(failure.error!, requestId));
  return true;
}

/** The outcome of a call that failed with one of the gateway's errors, as a failure a combo can act on. */
export function failWith(outcome: Outcome, e: TollgateError): UpstreamFailure {
  outcome.status = 'failure';
  outcome.httpStatus = e.status;
  outcome.errorType = e.code;
  outcome.span?.end(null, e.code);
  return errorFailure(e);
}

/** A stream that failed after it started: the connection cools, the client already has its bytes. */
export function streamFailure(reason: string): UpstreamFailure {
  return { status: 502, body: null, headers: {}, error: null, retryable: false, cool: true, quotaExhausted: false, retryAfterMs: null, reason };
}

/**
 * A 200 to a stream request that is not an event stream (an HTML page from a proxy in between, a JSON body): refused
 * before any byte reaches the client, a 502 in the gateway's error shape (its span ended so). No content type: taken
 * as a stream, and read. Null when it is one. Every stream path asks it: the fast path, the translated path (each
 * combo attempt) and the same-format passthrough.
 *
 * A JSON body is a whole answer from a server that ignored `stream: true`, and the provider bills it: it is read
 * (within the answer limit) and the usage it reports (`usageOf`, the path's format) is the attempt's, so its row
 * holds what was billed. Any other body is discarded (the connection closed, not left held unread).
 */
export function notEventStream(call: UpstreamCall, outcome: Outcome, usageOf: (json: unknown) => Usage | null): Promise<TollgateError> | null {
  const type = String(call.res.headers['content-type'] ?? 'text/event-stream');
  if (type.startsWith('text/event-stream')) return null;
  return refuseNotEventStream(call, outcome, usageOf);
}

async function refuseNotEventStream(call: UpstreamCall, outcome: Outcome, usageOf: (json: unknown) => Usage | null): Promise<TollgateError> {
  const type = String(call.res.headers['content-type']).split(';')[0]!.trim();
  let counted = false;
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      const usage = usageOf(JSON.parse((await call.res.bytes()).toString('utf8')));
      if (usage !== null) {
        outcome.usage = usage;
        outcome.usageSource = 'reported';
        counted = true;
      }
    } catch {} // not JSON, no answer, past the limit: nothing to count, refused all the same
  } else discard(call.res.body);
  outcome.upstreamMs = call.elapsedMs();
  call.span?.end(call.res.status, 'not_event_stream');
  const billed = counted ? ' (its usage is recorded: the provider bills it)' : '';
  return new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider answered a stream request with ${type}, not an event stream${billed}`);
}

/**
 * A 2xx whose body is an error and no answer (`{"error": ...}` with none of an answer's `choices`, `content`,
 * `output` or `candidates`), as some OpenAI-compatible vendors answer a failure: the upstream's protocol failing, its
 * message quoted (bounded, credentials redacted); null for an answer. Taken for one, it was relayed as a 200 and
 * recorded a billed success (its input estimated), and a combo never moved on.
 */
export function errorAnswer(call: UpstreamCall, json: unknown): TollgateError | null {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  if (o.error === undefined || o.error === null || o.choices !== undefined || o.content !== undefined || o.output !== undefined || o.candidates !== undefined) return null;
  const said = typeof o.error === 'string' ? o.error : (o.error as { message?: unknown }).message;
  const message = relayedText(call, typeof said === 'string' ? said : JSON.stringify(o.error)).slice(0, 300);
  call.span?.end(call.res.status, 'error_answer');
  return new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider answered ${call.res.status} with an error and no answer: ${message}`);
}

/** The error for a whole answer that is not JSON, or (`what`) JSON that is no answer (its span ended so). */
export function notJson(call: UpstreamCall, what = 'a body that is not JSON'): TollgateError {
  call.span?.end(call.res.status, 'invalid_json');
  return new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider returned ${what}`);
}
