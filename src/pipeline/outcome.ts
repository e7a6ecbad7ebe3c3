// What every data-plane pipeline shares: the outcome of one request, folded into the one usage record that goes to
// every ledger (row + metrics) and closes the span; the one rule for estimating what the upstream did not report; and
// what a stream of canonical events says about its request (StreamFacts).

import { performance } from 'node:perf_hooks';
import type { ProviderGroup } from '../config/types.js';
import type { Route } from '../routing/resolve.js';
import { computeCost, ZERO_COST, type Cost } from '../ledger/cost.js';
import { makeRecord, MAX_REQUESTED_MODEL, type RecordKind, type RequestStatus, type UsageRecord } from '../ledger/record.js';
import { AnswerText, estimateInputNow, estimateMissing, familyOf, type SentRequest } from '../wire/estimate.js';
import { NO_USAGE, knowsInput, knowsOutput, type Usage, type UsageSource } from '../ledger/types.js';
import type { CallInFlight, Progress } from '../ledger/ledger.js';
import { OTHER } from '../telemetry/names.js';
import { finishReasonOf, type UpstreamSpan } from '../telemetry/tracing.js';
import type { CanonicalEvent } from '../wire/canonical.js';

/** Everything observed about one request; folded into the usage record at the end. */
export interface Outcome {
  route: Route | null;
  status: RequestStatus;
  httpStatus: number;
  errorType: string;
  usage: Usage;
  usageSource: UsageSource;
  ttftMs: number | null;
  upstreamMs: number | null;
  /** The request was handed to the upstream (CallOptions.onDispatch): the record's `dispatched`. */
  dispatched: boolean;
  /** The upstream call's span, closed with the record. */
  span: UpstreamSpan | null;
  /** The cost when it is not computed from the route (a combo's: the sum of its attempts'). */
  cost: Cost | null;
  autoSwitched: boolean;
  /** Time spent estimating usage after the answer (src/wire/estimate.ts): not part of the request's latency. */
  estimateMs: number;
  /** How far the answer has come while it streams (shared by a combo's attempts with the client's request). */
  readonly streamed: StreamedSoFar;
  /** The request sent upstream, for the live monitor's estimate of its input (null until it is sent). */
  sent: SentInput | null;
  /** A combo request's attempts in flight (combo/attempt.ts), the latest started last: for the live monitor. */
  readonly attemptsInFlight: Outcome[];
}

/**
 * The request an upstream call sent, read only when the live monitor asks for its input before the upstream reported
 * it; then estimated once (estimateInputNow: the tokenizer if an estimate loaded it already, else characters / 4)
 * and kept. `read` gives the request (null: one that cannot be read, no estimate).
 */
export class SentInput {
  readonly #read: () => SentRequest | null;
  #tokens: number | null | undefined;

  constructor(read: () => SentRequest | null) {
    this.#read = read;
  }

  /** Its input tokens counted as `route`'s model family counts them. */
  tokens(route: Route): number | null {
    if (this.#tokens === undefined) {
      try {
        const req = this.#read();
        this.#tokens = req === null ? null : estimateInputNow(req, familyOf(route.provider.format, route.modelId));
      } catch {
        this.#tokens = null;
      }
    }
    return this.#tokens;
  }
}

/** The answer so far, for the live monitor: characters of output streamed, and the output the request allows. */
export interface StreamedSoFar {
  chars: number;
  expected: number | null;
}

/** A fresh outcome; a combo attempt passes the client request's `streamed`, so its output counts there. */
export function newOutcome(streamed: StreamedSoFar = { chars: 0, expected: null }): Outcome {
  return {
    route: null, status: 'success', httpStatus: 200, errorType: '', usage: NO_USAGE, usageSource: 'none', ttftMs: null, upstreamMs: null,
    dispatched: false, span: null, cost: null, autoSwitched: false, estimateMs: 0, streamed, sent: null, attemptsInFlight: [],
  };
}

/** About four characters a token: the live estimate of streamed output (the row gets the tokenizer's count). */
const CHARS_PER_TOKEN = 4;

/**
 * How far a request in flight has come: the upstream's output count once reported, else its text's estimate; its
 * input as estimated from the request sent while the upstream has reported none (computed once, when first asked).
 */
export function progressOf(outcome: Outcome): Progress {
  const reported = outcome.usageSource === 'reported' ? outcome.usage.output : null;
  const attempts = outcome.attemptsInFlight.length === 0 ? undefined : outcome.attemptsInFlight.flatMap(callInFlight);
  return {
    streamedTokens: reported ?? Math.ceil(outcome.streamed.chars / CHARS_PER_TOKEN),
    estimatedTotal: outcome.streamed.expected,
    // Worked out only when read (the live list's cost): the in-flight gauge, which a scrape reads, needs none of it.
    get estimatedInput() {
      return inputEstimate(outcome);
    },
    ...(attempts === undefined ? {} : { attempts }),
  };
}

/** The input of the request sent, estimated (once: SentInput keeps it) while the upstream has reported none. */
function inputEstimate(outcome: Outcome): number | null {
  const { route, sent } = outcome;
  return route === null || sent === null || knowsInput(outcome.usage) ? null : sent.tokens(route);
}

/** A combo's attempt in flight as the live monitor prices it (none before its member's route is set). */
function callInFlight(attempt: Outcome): CallInFlight[] {
  const route = attempt.route;
  if (route === null) return [];
  const reported = attempt.usageSource === 'reported' ? attempt.usage.output : null;
  return [{
    model: route.model, provider: route.providerId, usage: attempt.usage, streamedTokens: reported ?? Math.ceil(attempt.streamed.chars / CHARS_PER_TOKEN),
    get estimatedInput() {
      return inputEstimate(attempt);
    },
  }];
}

export interface RequestMeta {
  readonly endpoint: string;
  readonly requestId: string;
  readonly startedAt: number;
  readonly t0: number;
  readonly requestedModel: string;
  readonly stream: boolean;
  /** Default `request`; a combo request, one of its attempts, or a keep-alive ping otherwise. */
  readonly kind?: RecordKind;
  readonly parentId?: string;
  readonly combo?: string;
  readonly attempt?: number;
  /** The request's trace id ('' or absent: none). */
  readonly traceId?: string;
}

export function recordOf(outcome: Outcome, meta: RequestMeta, apiKeyName: string): UsageRecord {
  const totalMs = performance.now() - meta.t0 - outcome.estimateMs;
  const route = outcome.route;
  return makeRecord({
    kind: meta.kind ?? 'request',
    parentId: meta.parentId ?? '',
    combo: meta.combo ?? '',
    attempt: meta.attempt ?? 0,
    connection: route?.connection?.name ?? '',
    autoSwitched: outcome.autoSwitched,
    requestId: meta.requestId,
    startedAt: meta.startedAt,
    endedAt: Date.now() - Math.round(outcome.estimateMs),
    endpoint: meta.endpoint,
    provider: route?.providerId ?? OTHER,
    providerGroup: (route?.provider.group ?? '') as ProviderGroup | '',
    // An unlisted model's id is client input: bounded as requested_model is (the row also makes it well-formed).
    model: route ? route.model.slice(0, MAX_REQUESTED_MODEL) : OTHER,
    requestedModel: meta.requestedModel,
    modelKnown: route?.modelConfig != null,
    apiKeyName,
    stream: meta.stream,
    status: outcome.status,
    httpStatus: outcome.httpStatus,
    errorType: outcome.errorType,
    usage: outcome.usage,
    usageSource: outcome.usageSource,
    cost: outcome.cost ?? (route ? computeCost(route.provider, route.modelId, outcome.usage) : ZERO_COST),
    latency: meta.stream ? { kind: 'stream', ttftMs: outcome.ttftMs, totalMs } : { kind: 'unary', totalMs },
    upstreamMs: outcome.upstreamMs,
    traceId: meta.traceId ?? '',
    dispatched: outcome.dispatched,
  });
}

/**
 * The one estimate rule, on every path (fast path, passthrough, translated, combo attempts, fusion members): what the
 * upstream did not report is estimated, bucket by bucket (src/wire/estimate.ts): the input from the request that was
 * sent, the output from `answer`; reported buckets are kept. Called once the upstream accepted the request (2xx) and
 * the answer is over, and only when something was produced or nothing went wrong upstream: an answer that finished, a
 * client that went away, or a stream cut after it produced text. A stream broken by the upstream before any text (an
 * error event, a dropped connection) is not estimated: nothing shows it was billed. A usage reported whole costs
 * nothing here. The record's cost is computed from the estimates as usual. Never fails the request.
 */
export async function settleEstimate(outcome: Outcome, sent: SentRequest, answer: AnswerText): Promise<void> {
  const route = outcome.route;
  if (route === null || (outcome.status === 'failure' && !answer.seen)) return;
  if (knowsInput(outcome.usage) && knowsOutput(outcome.usage)) return;
  const t = performance.now();
  try {
    const usage = await estimateMissing(outcome.usage, sent, answer, familyOf(route.provider.format, route.modelId));
    if (usage !== null) {
      outcome.usage = usage;
      outcome.usageSource = 'estimated';
    }
  } catch {
    // A tokenizer that cannot load leaves the buckets as reported (usage_source unchanged).
  } finally {
    outcome.estimateMs += performance.now() - t;
  }
}

/** An upstream status that answers (2xx): the upstream had the prompt and accepted it. */
export const accepted = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

/**
 * A whole (non-streamed) answer cut while it was awaited or read: its client left, or a fusion's deadline cut the
 * member. Once the upstream's 2xx status came (`status`), it had the prompt and accepted it, and bills it: the input
 * is estimated, as for a stream the client aborted (settleEstimate); the output is not, no text of it having been
 * read. Before any status, or after an error status, nothing is (usage_source stays as it was).
 */
export async function settleCut(outcome: Outcome, sent: SentRequest, status: number | null): Promise<void> {
  if (accepted(status)) await settleEstimate(outcome, sent, new AnswerText());
}

/**
 * What a stream of canonical events says about its request, folded as the events pass: usage (a later report
 * replaces an earlier one, so it is counted once), the time to the first output, the answer's text (for an estimate
 * when no usage comes), the response's id, model and finish reasons, and an upstream error event (a failure). One
 * reading for the translated and the passthrough paths.
 */
export class StreamFacts {
  id: string | null = null;
  model: string | null = null;
  readonly reasons: string[] = [];
  readonly #outcome: Outcome;
  readonly #answer: AnswerText;
  readonly #t0: number;

  constructor(outcome: Outcome, answer: AnswerText, t0: number) {
    this.#outcome = outcome;
    this.#answer = answer;
    this.#t0 = t0;
  }

  observe(e: CanonicalEvent): void {
    const outcome = this.#outcome;
    switch (e.type) {
      case 'usage':
        outcome.usage = e.usage;
        outcome.usageSource = 'reported';
        break;
      case 'text_delta':
        this.#answer.output(e.text);
        this.#firstOutput(e.text.length);
        break;
      case 'reasoning_delta':
        this.#answer.reasoning(e.text);
        this.#firstOutput(e.text.length);
        break;
      case 'tool_call_start':
        this.#answer.output(e.name);
        outcome.streamed.chars += e.name.length;
        break;
      case 'tool_call_delta':
        this.#answer.output(e.arguments);
        this.#firstOutput(e.arguments.length);
        break;
      case 'start':
        this.id = e.id || null;
        this.model = e.model || null;
        break;
      case 'finish':
        this.reasons.push(finishReasonOf(e.stopReason));
        break;
      case 'error':
        outcome.status = 'failure';
        outcome.errorType = 'upstream_stream_error';
        break;
      default:
        break;
    }
  }

  /** Output arrived (`chars` of it): the first sets the time to first token. */
  #firstOutput(chars: number): void {
    this.#outcome.streamed.chars += chars;
    if (this.#outcome.ttftMs === null) this.#outcome.ttftMs = performance.now() - this.#t0;
  }
}
