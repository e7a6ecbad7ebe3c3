// Fusion (spec item 7): the prompt goes to every usable member in parallel (each checked against its provider's
// quota with those before it counted in flight: the panel is the members that fit), without tools and with tool
// history flattened to text (spec Errors 5: a panel call must not draw a 503 from a member that cannot take them).
// The gateway waits until `quorum` members have answered (default: a majority), then at most `grace_ms` more for the
// rest, never past `timeout_ms` from the start; members still running then are cut off (recorded as aborted; one
// cut after its upstream's 2xx status came has its input estimated, the provider having accepted it). The
// `judge` model (default: the first member) then synthesises one final answer from the candidates, and that is
// what the client gets, streamed if it asked for a stream. With no candidate at all, the client gets the last
// member's failure. The x-tollgate-dropped-params header lists what the requests of the members that answered did
// not carry (the judge's own request is the gateway's, not the client's).

import { performance } from 'node:perf_hooks';
import { TollgateError } from '../../core/errors.js';
import { member, memberProvider, type Member } from '../../routing/combos.js';
import { errorFailure, type UpstreamFailure } from '../../routing/failures.js';
import type { CanonicalField, CanonicalRequest, CanonicalResponse, Message, Part } from '../../wire/canonical.js';
import { answerOf } from '../../wire/estimate.js';
import { takeFinalAttempt, attempt, noMemberAvailable, type AttemptResult, type ComboRun } from './attempt.js';
import { classifyTransportError } from '../../providers/transport.js';
import { ClientAbort } from '../../providers/upstream.js';
import { SentInput, settleCut, settleEstimate, type Outcome } from '../outcome.js';
import { buildUpstream, droppedParams, fitRequest, forward, readAnswer, type Exchange } from '../forward.js';
import { failWith, readUpstreamError, sendFailure } from '../upstream.js';
import { CLIENT_CLOSED } from '../reply.js';

/** Defaults of a fusion combo's waits: 2 s of grace after the quorum, 120 s in all. */
export const FUSION_GRACE_MS = 2000;
export const FUSION_TIMEOUT_MS = 120_000;

const JUDGE_INSTRUCTIONS =
  'You are the judge of a panel of models. Several models answered the same conversation; their answers follow. ' +
  'Write the single best final answer to the last user message: keep what is right, correct what is wrong, and ' +
  'combine their strengths. Reply with the final answer only, without mentioning the panel or the candidates.';

/** A part as plain text for a panel member or the judge (tool calls and results become text; reasoning is dropped). */
function partText(p: Part): string {
  switch (p.type) {
    case 'text':
      return p.text;
    case 'tool_call':
      return `[called tool ${p.name} with ${p.arguments}]`;
    case 'tool_result':
      return `[result of tool ${p.name ?? p.callId}${p.isError ? ' (error)' : ''}: ${p.content.map(partText).filter(Boolean).join('\n')}]`;
    default:
      return '';
  }
}

/**
 * The request a panel member gets: no tools (function or built-in, recorded in `removed`), tool history as text,
 * reasoning from another family dropped.
 */
export function panelRequest(req: CanonicalRequest): CanonicalRequest {
  const messages: Message[] = req.messages.map((m) => ({
    role: m.role,
    content: m.content.flatMap((p): Part[] => {
      if (p.type === 'image' || p.type === 'file' || p.type === 'audio' || p.type === 'text') return [p];
      const text = partText(p);
      return text ? [{ type: 'text', text }] : [];
    }),
  }));
  const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = { ...req, messages: messages.filter((m) => m.content.length > 0), stream: false };
  const removed: CanonicalField[] = [];
  for (const [field, listed] of [['tools', 'tools'], ['builtinTools', 'webSearch'], ['toolChoice', 'toolChoice'], ['parallelToolCalls', 'parallelToolCalls']] as const) {
    if (out[field] === undefined) continue;
    delete out[field];
    removed.push(listed);
  }
  if (removed.length > 0) out.removed = [...(req.removed ?? []), ...removed];
  return out;
}

/** The judge's request: the conversation and the candidates as text, under the judge's instructions. */
export function judgeRequest(req: CanonicalRequest, candidates: readonly { model: string; text: string }[], stream: boolean): CanonicalRequest {
  const transcript = req.messages.map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content.map(partText).filter(Boolean).join('\n')}`).join('\n\n');
  const system = req.system.map(partText).filter(Boolean).join('\n');
  const answers = candidates.map((c, i) => `--- Candidate ${i + 1} (${c.model}) ---\n${c.text}`).join('\n\n');
  const text = `${system ? `System instructions the panel followed:\n${system}\n\n` : ''}Conversation:\n${transcript}\n\nCandidate answers:\n\n${answers}`;
  const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
    model: req.model, system: [{ type: 'text', text: JUDGE_INSTRUCTIONS }], messages: [{ role: 'user', content: [{ type: 'text', text }] }], stream,
  };
  if (req.maxTokens !== undefined) out.maxTokens = req.maxTokens;
  if (req.user !== undefined) out.user = req.user;
  return out;
}

/** What one panel member's request did not carry (client parameter names), by its outcome. */
type PanelDrops = Map<Outcome, readonly string[]>;

/** A panel member's call: the member, its fitted request, where its answer and what it dropped are kept. */
interface PanelCall {
  readonly member: Member;
  readonly request: CanonicalRequest;
  /** Aborts the call: the deadline, or the client left (`clientGone`). */
  readonly cut: ClientAbort;
  readonly clientGone: () => boolean;
  readonly answers: Map<Outcome, CanonicalResponse>;
  readonly drops: PanelDrops;
}

/** An answer's text ('' when it has none: no candidate). */
const textOf = (a: CanonicalResponse): string => a.content.map((p) => (p.type === 'text' ? p.text : '')).join('');

/** One panel member's whole answer (non-streamed), or its failure. */
async function collect(exchange: Exchange, panel: PanelCall, outcome: Outcome): Promise<UpstreamFailure | null> {
  const route = await exchange.ctx.router.connect(panel.member.route);
  outcome.route = route;
  const outbound = exchange.codecs(route.provider.format);
  const built = buildUpstream(exchange, outbound, panel.request, route);
  outcome.sent = new SentInput(() => ({ canonical: panel.request }));
  panel.drops.set(outcome, droppedParams(exchange.inbound.codec.paramNames, panel.request, built.dropped));
  const sentAt = performance.now();
  let answered: number | null = null; // the upstream's status, once it came
  try {
    const call = await exchange.ctx.upstream.callOnce(route, panel.request, {
      codec: outbound, built, stream: false, signal: panel.cut, trace: exchange.trace, onSpan: (span) => (outcome.span = span),
      onDispatch: () => (outcome.dispatched = true),
    });
    answered = call.res.status;
    const failed = await readUpstreamError(call, outcome);
    if (failed !== null) return failed;
    const text = await call.res.text();
    outcome.upstreamMs = call.elapsedMs();
    const answer = readAnswer(outbound, text, outcome, { call, answerTool: built.answerTool });
    call.span?.end(call.res.status, null);
    panel.answers.set(outcome, answer);
    await settleEstimate(outcome, { canonical: panel.request }, answerOf(answer.content));
    return null;
  } catch (err) {
    outcome.upstreamMs = performance.now() - sentAt;
    if (panel.cut.aborted) {
      // Cut off by the deadline, or by the client leaving (an abort like any other then).
      outcome.status = 'aborted';
      outcome.errorType = panel.clientGone() ? 'client_closed' : 'fusion_cut_off';
      // what the call came to: the upstream's status when it had come, else the client's 499 or the deadline's 504
      outcome.httpStatus = answered ?? (panel.clientGone() ? CLIENT_CLOSED : 504);
      outcome.span?.end(answered, outcome.errorType);
      // Cut after its 2xx: the provider had the prompt and bills it (a whole answer is mostly generated by then).
      await settleCut(outcome, { canonical: panel.request }, answered);
      return errorFailure(new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'the panel member did not answer within the fusion time limit'));
    }
    return failWith(outcome, err instanceof TollgateError ? err : classifyTransportError(err));
  }
}

/** The panel's answers once enough are in (or the deadline passed, or the client went away: `clientGone`). */
async function askPanel(exchange: Exchange, run: ComboRun, members: readonly Member[]): Promise<PanelResults> {
  const combo = run.config;
  const request = panelRequest(exchange.parsed);
  const cut = new ClientAbort();
  let clientGone = false;
  const onClose = () => {
    if (exchange.reply.raw.writableFinished) return;
    clientGone = true;
    cut.abort();
  };
  exchange.reply.raw.on('close', onClose);
  const answers = new Map<Outcome, CanonicalResponse>();
  const drops: PanelDrops = new Map();
  let settled = 0;
  let wake: () => void = () => undefined;
  const enough = new Promise<void>((resolve) => (wake = resolve));
  const timers: NodeJS.Timeout[] = [setTimeout(wake, combo.timeout_ms ?? FUSION_TIMEOUT_MS)];
  let grace = false;
  // The panel's attempts, every one started before any settles (below): the quorum is of the members that fit.
  const running: Promise<AttemptResult>[] = [];
  const onSettled = () => {
    settled++;
    const quorum = Math.min(combo.quorum ?? Math.ceil(running.length / 2), running.length);
    if (settled === running.length) wake();
    // only answers with text count: an empty one is no candidate for the judge
    else if (!grace && [...answers.values()].filter((a) => textOf(a) !== '').length >= quorum) {
      grace = true;
      timers.push(setTimeout(wake, combo.grace_ms ?? FUSION_GRACE_MS));
    }
  };
  cut.once('abort', wake);
  try {
    for (const m of members) {
      // Checked with the judge and the members before it counted in flight (an attempt is, from its start in this same
      // turn): a member whose provider they use up is skipped as one out of quota is.
      if (exchange.ctx.router.quota.exhausted(m.route.providerId)) continue;
      const fitted = fitRequest(request, m.route, { model: exchange.parsed.model, thinking: m.thinking, stream: false });
      const panel: PanelCall = { member: m, request: fitted, cut, clientGone: () => clientGone, answers, drops };
      running.push(attempt(exchange, run, { n: running.length + 1, member: m, canonical: fitted, call: (outcome) => collect(exchange, panel, outcome) }).finally(onSettled));
    }
    // The judge's call, counted first, left no member room (a request quota shared with it, one request left).
    // Retry-After: the first moment any member of the combo is usable again, those passed over as cooling included.
    if (running.length === 0) throw noMemberAvailable(exchange, comboProviders(run), `no member of combo '${run.name}' fits beside its judge in its provider's quota; GET /api/quota shows until when`);
    await enough;
    cut.abort(); // members still running are cut off
    const attempts = await Promise.all(running);
    return { attempts, answers, drops, clientGone };
  } finally {
    for (const t of timers) clearTimeout(t);
    exchange.reply.raw.off('close', onClose);
  }
}

interface PanelResults {
  readonly attempts: readonly AttemptResult[];
  readonly answers: ReadonlyMap<Outcome, CanonicalResponse>;
  readonly drops: PanelDrops;
  readonly clientGone: boolean;
}

/** The providers of every member of the combo (the config's list, usable now or not). */
function comboProviders(run: ComboRun): string[] {
  return run.config.models.flatMap((spec) => memberProvider(spec) ?? []);
}

export async function runFusion(exchange: Exchange, run: ComboRun, members: readonly Member[]): Promise<void> {
  const { name, config: combo } = run;
  // The judge is resolved now, from the config the members were (a request in flight keeps the config it started
  // with): resolved after the panel, an edit made meanwhile priced it anew or, removing it, refused the request.
  const judge = member(exchange.ctx.config.current, combo.judge ?? combo.models[0]!);
  // The judge's provider cooling down (as a member's is skipped) or out of quota: the answer could not be judged, so no
  // member is asked (their calls would be spent for nothing) and the client gets the 503 of a combo that cannot run
  // now, with Retry-After: the end of the cooldown or the quota's reset, the later of the two (docs/routing.md).
  // Else its call is counted in flight from now, so the panel cannot use up the quota it needs (askPanel).
  refuseUnusableJudge(exchange, name, judge);
  const reserved = exchange.ctx.router.quota.reserve?.(judge.route.providerId);
  try {
    await judged(exchange, run, { members, judge, reserved });
  } finally {
    reserved?.(); // the judge never called (no candidate, the client gone, an error): its reservation is given back
  }
}

/**
 * The 503 of a combo whose judge cannot be called now (its provider cooling down, or out of quota), Retry-After when it
 * is usable again; checked before the panel is asked and again right before the judge's call.
 */
function refuseUnusableJudge(exchange: Exchange, name: string, judge: Member): void {
  const { router } = exchange.ctx;
  const id = judge.route.providerId;
  const unusable = router.isCooling(id) ? 'is cooling down after failures' : router.quota.exhausted(id) ? 'is out of quota' : null;
  if (unusable !== null) throw noMemberAvailable(exchange, [id], `the judge of combo '${name}' (${judge.spec}) ${unusable}; GET /api/quota shows until when`);
}

/** The panel asked, and its candidates judged by `judge`, whose quota reservation (`reserved`) holds until then. */
async function judged(exchange: Exchange, run: ComboRun, plan: { members: readonly Member[]; judge: Member; reserved: (() => void) | undefined }): Promise<void> {
  const { name, outcome: requestOutcome } = run;
  const { judge, reserved } = plan;
  const fannedOut = performance.now();
  const panel = await askPanel(exchange, run, plan.members);
  requestOutcome.upstreamMs = performance.now() - fannedOut;
  if (panel.clientGone) {
    // The client request names the member that answered, or the last one tried, as a fallback combo's does.
    const last = [...panel.attempts].reverse().find((r) => panel.answers.has(r.outcome)) ?? panel.attempts.at(-1);
    if (last) requestOutcome.route = last.outcome.route;
    requestOutcome.status = 'aborted';
    requestOutcome.errorType = 'client_closed';
    requestOutcome.httpStatus = 499;
    if (!exchange.reply.sent) exchange.reply.hijack();
    return;
  }
  const candidates = panel.attempts.flatMap((r) => {
    const a = panel.answers.get(r.outcome);
    const text = a === undefined ? '' : textOf(a);
    return text ? [{ model: r.record.model, text }] : [];
  });
  if (candidates.length === 0) {
    const last = [...panel.attempts].reverse().find((r) => r.failure !== null);
    if (last) takeFinalAttempt(requestOutcome, last);
    // Every member answered, none with text: the row names the last one tried, as a fallback combo's does, and why.
    else if (panel.attempts.length > 0) requestOutcome.route = panel.attempts.at(-1)!.outcome.route;
    requestOutcome.status = 'failure';
    const f = last?.failure ?? errorFailure(new TollgateError('TOLLGATE_ERR_FUSION_NO_ANSWER', `no member of combo '${name}' answered`));
    requestOutcome.httpStatus = f.status;
    if (last === undefined) requestOutcome.errorType = 'TOLLGATE_ERR_FUSION_NO_ANSWER';
    sendFailure(exchange.reply, f, exchange.requestId);
    return;
  }
  const request = fitRequest(judgeRequest(exchange.parsed, candidates, exchange.stream), judge.route, { model: exchange.parsed.model, thinking: judge.thinking, stream: exchange.stream });
  const panelMs = requestOutcome.upstreamMs;
  // The answer is made of the candidates: the client is told what their requests did not carry, not the judge's.
  const dropped = [...new Set(panel.attempts.flatMap((r) => (panel.answers.has(r.outcome) ? (panel.drops.get(r.outcome) ?? []) : [])))].sort();
  // The panel may have cooled the judge's provider (the judge is a member too, its call answered a 429) or used up its
  // quota (a new reading of it): checked again, its own reservation given back first (counted, it would use up its
  // last request), and the judge's attempt takes a new one in this same turn. Refused, the panel's attempt rows stand
  // and the client row is the 503, as for a judge refused before the panel.
  reserved?.();
  refuseUnusableJudge(exchange, name, judge);
  const verdict = await attempt(exchange, run, {
    n: panel.attempts.length + 1, member: judge, canonical: request,
    call: (outcome, t0) => forward(exchange, { route: judge.route, canonical: request, outcome, t0, failures: 'return', dropped }),
  });
  requestOutcome.upstreamMs = panelMs + (verdict.outcome.upstreamMs ?? 0);
  takeFinalAttempt(requestOutcome, verdict);
  // The judge's failure, answered with its status (a stream that broke before its first output had answered 200).
  if (verdict.failure !== null && sendFailure(exchange.reply, verdict.failure, exchange.requestId)) requestOutcome.httpStatus = verdict.failure.status;
}
