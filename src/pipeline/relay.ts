// The translated path's stream relay: upstream SSE -> frames -> the provider codec's canonical events -> the client
// codec's SSE. Usage, time to first token, the answer's text and the finish are read from the canonical events as
// they pass (StreamFacts). An upstream error event is held and rendered once, as the client format's terminal error,
// when the stream ends.
//
// Two ways to handle a failure, chosen by `failures`:
// - 'answer': the client's stream opens at once; whatever goes wrong is told to the client inside it.
// - 'return' (a combo attempt): the client's stream opens with the first output, and a failure before it is returned
//   with nothing sent, so the next member may answer.

import type { FastifyReply } from 'fastify';
import { TollgateError } from '../core/errors.js';
import type { StreamParser, StreamRenderer } from '../wire/codec.js';
import type { CanonicalEvent } from '../wire/canonical.js';
import type { AnswerText } from '../wire/estimate.js';
import { SseParser, type SseFrame } from '../wire/sse.js';
import { errorFailure, type UpstreamFailure } from '../routing/failures.js';
import type { RequestTrace } from '../telemetry/tracing.js';
import { classifyTransportError } from '../providers/transport.js';
import { discard } from '../providers/answer-body.js';
import type { ClientAbort, UpstreamResponse } from '../providers/upstream.js';
import type { GatewayContext } from './context.js';
import { StreamFacts, type Outcome } from './outcome.js';
import { EventStreamOut, bodyEnded, markAborted, openEventStream, stallOf } from './reply.js';
import { relayedText, streamFailure, type UpstreamCall } from './upstream.js';

/** What a failure does: told to the client ('answer'), or returned before the first byte ('return', a combo attempt). */
export type FailureHandling = 'answer' | 'return';

export interface RelayOptions {
  readonly ctx: GatewayContext;
  readonly reply: FastifyReply;
  readonly outcome: Outcome;
  readonly trace: RequestTrace;
  /** The provider codec's parser (canonical events out) and the client codec's renderer (the client's SSE out). */
  readonly parser: StreamParser;
  readonly renderer: StreamRenderer;
  /** Where the answer's text is kept, for an estimate when the upstream reports no usage. */
  readonly answer: AnswerText;
  /** Aborted when the client goes away. */
  readonly clientGone: ClientAbort;
  /** performance.now() when the request (or the attempt) started: the time to first token is measured from it. */
  readonly t0: number;
  readonly failures: FailureHandling;
  /** The call: the upstream's own words (an error event's message) go to the client with its credentials out (relayedText). */
  readonly call: UpstreamCall;
}

const REPORTED_ERROR = 'the upstream provider reported an error';

export class EventRelay {
  readonly #opts: RelayOptions;
  readonly #facts: StreamFacts;
  /** Comments are kept: an upstream's keep-alives go on to the client once its stream is open (below). */
  readonly #sse = new SseParser({ comments: true });
  /** The client's stream, once open. */
  #client: EventStreamOut | null;
  /** An upstream error event, held until the stream ends. */
  #upstreamError: { message: string; code: string } | null = null;

  constructor(opts: RelayOptions) {
    this.#opts = opts;
    this.#facts = new StreamFacts(opts.outcome, opts.answer, opts.t0);
    this.#client = opts.failures === 'answer' ? this.#open() : null;
  }

  /**
   * Relay `res` to the client until it ends. Returns the failure when `failures` is 'return' and nothing reached the
   * client; otherwise null (the outcome says how it went).
   */
  async run(res: UpstreamResponse): Promise<UpstreamFailure | null> {
    const { outcome, parser } = this.#opts;
    try {
      for await (const chunk of res.body) {
        const frames = this.#sse.push(chunk as Uint8Array);
        const out = this.#comments() + this.#translate(frames);
        if (out) await this.#emit(out, bodyEnded(res.body));
        else if (this.#client === null && outcome.status === 'failure') break; // an error before any output
      }
      let tail = '';
      if (this.#client !== null || outcome.status !== 'failure') {
        const frames = this.#sse.end();
        tail = this.#comments() + this.#translate(frames);
        for (const e of parser.end()) tail += this.#render(e);
      }
      if (!parser.terminated && outcome.status === 'success') {
        if (tail) await this.#emit(tail);
        throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider closed the stream before it finished');
      }
      if (this.#client === null && outcome.status === 'failure') {
        discard(res.body);
        const error = new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', this.#upstreamError?.message || REPORTED_ERROR);
        return { ...streamFailure(outcome.errorType), status: 502, retryable: true, error };
      }
      await this.#emit(tail + this.#ending(), true);
      return null;
    } catch (err) {
      return this.#failed(err, res);
    } finally {
      // The text seen is in `answer`; what the upstream did not report is estimated once the stream is closed.
      this.#client?.close({ closing: this.#opts.ctx.closing() });
      this.#opts.trace.setResponse(this.#facts.id, this.#facts.model, this.#facts.reasons);
    }
  }

  /**
   * The upstream's comments (keep-alives) as they came, for a client whose stream is open: before the first output of
   * a combo attempt they are dropped, since sending them would open the stream and stop the combo trying the next member.
   */
  #comments(): string {
    const block = this.#sse.takeComments();
    return this.#client === null ? '' : block;
  }

  /** Frames in, the client's SSE text out. */
  #translate(frames: readonly SseFrame[]): string {
    let out = '';
    for (const frame of frames) for (const e of this.#opts.parser.frame(frame)) out += this.#render(e);
    return out;
  }

  /** One canonical event: observed, then rendered (an upstream error is held for the end). */
  #render(e: CanonicalEvent): string {
    this.#facts.observe(e);
    if (e.type === 'error') {
      this.#upstreamError = { message: relayedText(this.#opts.call, e.message), code: e.code ?? '' };
      return '';
    }
    return this.#opts.renderer.event(e);
  }

  /** The client format's last words: its end, or the upstream's own error kind (the row keeps upstream_stream_error). */
  #ending(): string {
    const { outcome, renderer } = this.#opts;
    if (outcome.status === 'success') return renderer.end();
    return renderer.error(this.#upstreamError?.code || outcome.errorType, this.#upstreamError?.message || REPORTED_ERROR);
  }

  /** Write `s` to the client's stream (opened by the first); `last`: nothing more will be read (it goes with the end). */
  #emit(s: string, last = false): Promise<void> | void {
    return (this.#client ??= this.#open()).write(s, last);
  }

  #open(): EventStreamOut {
    return new EventStreamOut(openEventStream(this.#opts.reply, stallOf(this.#opts.outcome.route)));
  }

  /** The stream broke: a client that left is an abort; anything else a failure, returned or told to the client. */
  async #failed(err: unknown, res: UpstreamResponse): Promise<UpstreamFailure | null> {
    const { outcome, reply } = this.#opts;
    if (this.#opts.clientGone.aborted) {
      markAborted(outcome, reply);
      return null;
    }
    const e = err instanceof TollgateError ? err : classifyTransportError(err);
    outcome.status = 'failure';
    outcome.errorType = e.code;
    if (this.#client === null && this.#opts.failures === 'return') {
      discard(res.body);
      return errorFailure(e);
    }
    await this.#emit(this.#opts.renderer.error(e.code, relayedText(this.#opts.call, e.message)), true);
    return null;
  }
}
