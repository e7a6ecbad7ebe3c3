// One attempt of a combo: a member forwarded as its own usage row (kind 'attempt'), and how its outcome folds into
// the client's row. run.ts and fusion.ts make attempts.

import { performance } from 'node:perf_hooks';
import { TollgateError } from '../../core/errors.js';
import { type Member } from '../../routing/combos.js';
import type { UpstreamFailure } from '../../routing/failures.js';
import type { CanonicalRequest } from '../../wire/canonical.js';
import type { UsageRecord } from '../../ledger/record.js';
import { addUsage } from '../../ledger/types.js';
import { addCosts } from '../../ledger/cost.js';
import { uuidv7 } from '../../ledger/uuidv7.js';
import { newOutcome, type Outcome } from '../outcome.js';
import { forward, type Exchange } from '../forward.js';
import { finishAttempt, reportToRouter } from '../request.js';
import { failWith } from '../upstream.js';
import type { ComboConfig } from '../../config/types.js';

/** The combo a request named: its name, its config, and the client request's outcome its attempts fold into. */
export interface ComboRun {
  readonly name: string;
  readonly config: ComboConfig;
  readonly outcome: Outcome;
}

export interface AttemptResult {
  readonly failure: UpstreamFailure | null;
  readonly outcome: Outcome;
  readonly record: UsageRecord;
  /** When the attempt started, in ms after the client's request. */
  readonly offsetMs: number;
}

/** One attempt: the combo's `n`-th, of `member`, with the request fitted to it. */
export interface AttemptSpec {
  readonly n: number;
  readonly member: Member;
  readonly canonical: CanonicalRequest;
  /** How the attempt calls upstream (default: forward to the member, failures returned so the next may answer). */
  readonly call?: (outcome: Outcome, t0: number) => Promise<UpstreamFailure | null>;
  /** The member's quota reservation, when its caller took it earlier (a fusion judge's); default: taken as it starts. */
  readonly reserved?: () => void;
}

/** The members a combo may use now: those whose provider is neither cooling down nor out of quota. */
export function usableMembers(exchange: Exchange, name: string, members: readonly Member[]): Member[] {
  const { router } = exchange.ctx;
  const usable = members.filter((m) => !router.isCooling(m.route.providerId) && !router.quota.exhausted(m.route.providerId));
  if (usable.length > 0) return usable;
  throw noMemberAvailable(exchange, members.map((m) => m.route.providerId), `every member of combo '${name}' is cooling down or out of quota; GET /api/quota shows until when`);
}

/**
 * The 503 of a combo that cannot run now (TOLLGATE_ERR_NO_MEMBER_AVAILABLE), its Retry-After set to when the first of
 * `providers` (the members') is usable again: the later of its cooldown and its used-up quota's reset.
 */
export function noMemberAvailable(exchange: Exchange, providers: readonly string[], message: string): TollgateError {
  const until = Math.min(...providers.map((id) => usableAgainAt(exchange.ctx.router, id)));
  if (Number.isFinite(until)) exchange.reply.header('retry-after', String(Math.max(1, Math.ceil((until - Date.now()) / 1000))));
  return new TollgateError('TOLLGATE_ERR_NO_MEMBER_AVAILABLE', message);
}

function usableAgainAt(router: Exchange['ctx']['router'], providerId: string): number {
  const cooling = router.isCooling(providerId) ? router.provider(providerId).until : 0;
  const quota = router.quota.exhausted(providerId) ? (router.quota.resetsAt?.(providerId) ?? Number.POSITIVE_INFINITY) : 0;
  const at = Math.max(cooling, quota);
  return at > 0 ? at : Number.POSITIVE_INFINITY;
}

/** Fold one attempt's record into the client request's outcome (usage and cost are sums). */
export function foldAttemptUsage(requestOutcome: Outcome, r: UsageRecord): void {
  requestOutcome.usage = addUsage(requestOutcome.usage, r.usage);
  requestOutcome.cost = addCosts(requestOutcome.cost, r.cost);
  // A combo row went out when any of its attempts did.
  if (r.dispatched) requestOutcome.dispatched = true;
  if (r.usageSource === 'estimated' || (r.usageSource === 'reported' && requestOutcome.usageSource === 'none')) requestOutcome.usageSource = r.usageSource;
}

/** One member's attempt, answered to the client unless it fails before the first byte; recorded either way. */
export async function attempt(exchange: Exchange, combo: ComboRun, spec: AttemptSpec): Promise<AttemptResult> {
  const requestOutcome = combo.outcome;
  const outcome = newOutcome(requestOutcome.streamed);
  outcome.route = spec.member.route;
  outcome.autoSwitched = requestOutcome.autoSwitched;
  const t0 = performance.now();
  const startedAt = Date.now();
  const call = spec.call ?? ((attemptOutcome: Outcome, at: number) => forward(exchange, { route: spec.member.route, canonical: spec.canonical, outcome: attemptOutcome, t0: at, failures: 'return' }));
  // Counted in flight by the quota's verdict from now (the caller checked it in the same turn), or from when the caller
  // reserved it (`reserved`), until its record is published (below, or never: an error thrown through), so requests at
  // once see each other's calls.
  const release = spec.reserved ?? exchange.ctx.router.quota.reserve?.(spec.member.route.providerId);
  // Listed in flight (GET /api/live: its member, its cost so far) until its record is folded into the request's.
  requestOutcome.attemptsInFlight.push(outcome);
  let failure: UpstreamFailure | null;
  let record: UsageRecord;
  try {
    try {
      failure = await call(outcome, t0);
    } catch (err) {
      if (!(err instanceof TollgateError)) throw err;
      failure = failWith(outcome, err);
    }
    reportToRouter(exchange.ctx, outcome, failure);
    // An attempt refused before its call has a row, so a span too: one CLIENT child per attempt row.
    outcome.span ??= exchange.trace.unsent(spec.member.route.providerId, outcome.errorType);
    record = finishAttempt(exchange.ctx, exchange.req, outcome, {
      endpoint: exchange.inbound.endpoint, requestId: uuidv7(startedAt), startedAt, t0, requestedModel: spec.member.spec, stream: spec.canonical.stream,
      parentId: exchange.requestId, combo: combo.name, attempt: spec.n, traceId: exchange.trace.traceId,
    });
  } finally {
    release?.();
    requestOutcome.attemptsInFlight.splice(requestOutcome.attemptsInFlight.indexOf(outcome), 1);
  }
  foldAttemptUsage(requestOutcome, record);
  requestOutcome.upstreamMs = (requestOutcome.upstreamMs ?? 0) + (outcome.upstreamMs ?? 0);
  requestOutcome.estimateMs += outcome.estimateMs;
  return { failure, outcome, record, offsetMs: t0 - exchange.t0 };
}

/** The client request takes the final attempt's route, status and time to first token. */
export function takeFinalAttempt(requestOutcome: Outcome, a: AttemptResult): void {
  requestOutcome.route = a.outcome.route;
  requestOutcome.status = a.outcome.status;
  requestOutcome.httpStatus = a.outcome.httpStatus;
  requestOutcome.errorType = a.outcome.errorType;
  if (a.outcome.ttftMs !== null) requestOutcome.ttftMs = a.offsetMs + a.outcome.ttftMs;
}
