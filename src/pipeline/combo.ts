// A request to a combo: its members tried in the strategy's order (fallback, round-robin, capacity), or fanned out
// and judged (fusion.ts). Every upstream attempt is its own usage row (kind 'attempt', parent_id = the client's
// request id, the combo's name) with its own child span; the client's row (kind 'combo') carries the sum of its
// attempts' usage and cost. A member whose provider is cooling down is skipped; a failure before any byte reached
// the client moves on to the next member; when none is left the client gets the last failure as it came.

import { performance } from 'node:perf_hooks';
import type { ComboConfig } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { orderMembers, type Member } from '../routing/combos.js';
import type { UpstreamFailure } from '../routing/failures.js';
import type { CanonicalRequest } from '../wire/canonical.js';
import type { UsageRecord } from '../ledger/record.js';
import { addUsage } from '../ledger/types.js';
import { uuidv7 } from '../ledger/uuidv7.js';
import { runFusion } from './fusion.js';
import { finishAttempt, newOutcome, type Outcome } from './outcome.js';
import { failWith, fitRequest, forward, type Exchange } from './translated.js';
import { sendFailure, settleRoute } from './upstream-call.js';

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
  co.cost = { cost: round12((co.cost?.cost ?? 0) + r.cost.cost), listCost: round12((co.cost?.listCost ?? 0) + r.cost.listCost) };
  if (r.usageSource === 'estimated' || (r.usageSource === 'reported' && co.usageSource === 'none')) co.usageSource = r.usageSource;
}

const round12 = (v: number): number => Math.round(v * 1e12) / 1e12;

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

export async function runCombo(x: Exchange, name: string, combo: ComboConfig, co: Outcome): Promise<void> {
  x.trace.routedCombo(name);
  const members = orderMembers(x.ctx.config.current, combo, x.parsed, x.ctx.router.nextTurn(name));
  const usable = usableMembers(x, name, members);
  if (combo.strategy === 'fusion') return runFusion(x, name, combo, usable, co);
  let last: AttemptResult | null = null;
  for (const [i, m] of usable.entries()) {
    const canonical = fitRequest(x.parsed, m.route, x.parsed.model, m.thinking, x.stream);
    last = await attempt(x, name, i + 1, m, canonical, co);
    adopt(co, last);
    if (last.failure === null) return; // answered (or the client went away)
    if (!last.failure.retryable) break; // the request itself was refused: another member would refuse it too
  }
  // No member answered: the client gets the last failure with its status and Retry-After.
  if (last?.failure) sendFailure(x.reply, last.failure, x.requestId);
}
