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
import { finishAttempt, newOutcome, type Outcome } from '../outcome.js';
import { failWith, forward, type Exchange } from '../forward.js';
import { settleRoute } from '../upstream-call.js';


export interface AttemptResult {
  readonly failure: UpstreamFailure | null;
  readonly outcome: Outcome;
  readonly record: UsageRecord;
  /** When the attempt started, in ms after the client's request. */
  readonly offsetMs: number;
}

/** The members a combo may use now: those whose provider is neither cooling down nor out of quota. */
export function usableMembers(x: Exchange, name: string, members: readonly Member[]): Member[] {
  const { router } = x.ctx;
  const usable = members.filter((m) => !router.isCooling(m.route.providerId) && !router.quota.exhausted(m.route.providerId));
  if (usable.length > 0) return usable;
  const until = Math.min(...members.map((m) => router.provider(m.route.providerId).until).filter((u) => u > 0));
  if (Number.isFinite(until)) x.reply.header('retry-after', String(Math.max(1, Math.ceil((until - Date.now()) / 1000))));
  throw new TollgateError('TOLLGATE_ERR_NO_MEMBER_AVAILABLE', `every member of combo '${name}' is cooling down or out of quota; GET /api/quota shows until when`);
}

/** Fold one attempt's record into the client request's outcome (usage and cost are sums). */
export function absorb(co: Outcome, r: UsageRecord): void {
  co.usage = addUsage(co.usage, r.usage);
  co.cost = addCosts(co.cost, r.cost);
  if (r.usageSource === 'estimated' || (r.usageSource === 'reported' && co.usageSource === 'none')) co.usageSource = r.usageSource;
}

/** One member's attempt, answered to the client unless it fails before the first byte; recorded either way. */
export async function attempt(
  x: Exchange, combo: string, n: number, m: Member, canonical: CanonicalRequest, co: Outcome,
  call: (o: Outcome, t0: number) => Promise<UpstreamFailure | null> = (o, t0) => forward(x, m.route, canonical, o, t0, true),
): Promise<AttemptResult> {
  const o = newOutcome();
  o.route = m.route;
  o.autoSwitched = co.autoSwitched;
  const t0 = performance.now();
  const startedAt = Date.now();
  let failure: UpstreamFailure | null;
  try {
    failure = await call(o, t0);
  } catch (err) {
    if (!(err instanceof TollgateError)) throw err;
    failure = failWith(o, err);
  }
  settleRoute(x.ctx, o, failure);
  const record = finishAttempt(x.ctx, x.req, o, {
    endpoint: x.inbound.endpoint, requestId: uuidv7(startedAt), startedAt, t0, requestedModel: m.spec, stream: canonical.stream,
    parentId: x.requestId, combo, attempt: n,
  });
  absorb(co, record);
  co.upstreamMs = (co.upstreamMs ?? 0) + (o.upstreamMs ?? 0);
  co.estimateMs += o.estimateMs;
  return { failure, outcome: o, record, offsetMs: t0 - x.t0 };
}

/** The client request takes the final attempt's route, status and time to first token. */
export function adopt(co: Outcome, a: AttemptResult): void {
  co.route = a.outcome.route;
  co.status = a.outcome.status;
  co.httpStatus = a.outcome.httpStatus;
  co.errorType = a.outcome.errorType;
  if (a.outcome.ttftMs !== null) co.ttftMs = a.offsetMs + a.outcome.ttftMs;
}
