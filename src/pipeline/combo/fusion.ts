// Fusion (spec item 7): the prompt goes to every usable member in parallel, without tools and with tool history
// flattened to text (spec Errors 5: a panel call must not draw a 503 from a member that cannot take them). The
// gateway waits until `quorum` members have answered (default: a majority), then at most `grace_ms` more for the
// rest, never past `timeout_ms` from the start; members still running then are cut off (recorded as aborted). The
// `judge` model (default: the first member) then synthesises one final answer from the candidates, and that is
// what the client gets, streamed if it asked for a stream. With no candidate at all, the client gets the last
// member's failure. The x-tollgate-dropped-params header lists what the requests of the members that answered did
// not carry (the judge's own request is the gateway's, not the client's).

import { performance } from 'node:perf_hooks';
import type { ComboConfig } from '../../config/types.js';
import { TollgateError } from '../../core/errors.js';
import type { Target } from '../../wire/codec.js';
import { member, type Member } from '../../routing/combos.js';
import { errorFailure, httpFailure, type UpstreamFailure } from '../../routing/failures.js';
import type { CanonicalField, CanonicalRequest, CanonicalResponse, Message, Part } from '../../wire/canonical.js';
import { answerOf } from '../../wire/estimate.js';
import { adopt, attempt, type AttemptResult } from './attempt.js';
import { classifyTransportError } from '../../providers/transport.js';
import { ClientAbort } from '../../providers/upstream.js';
import { FORWARDED_ERROR_HEADERS, pickHeaders, settleEstimate, type Outcome } from '../outcome.js';
import { buildUpstream, droppedParams, failWith, fitRequest, forward, readAnswer, type Exchange } from '../forward.js';
import { sendFailure } from '../upstream-call.js';

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

/** One panel member's whole answer (non-streamed), or its failure. `cut` aborts it (deadline, or the client left). */
async function collect(
  x: Exchange, m: Member, req: CanonicalRequest, o: Outcome, cut: ClientAbort, answers: Map<Outcome, CanonicalResponse>, drops: PanelDrops,
): Promise<UpstreamFailure | null> {
  const route = await x.ctx.router.connect(m.route);
  o.route = route;
  const outbound = x.codecs(route.provider.format);
  const target: Target = { providerId: route.providerId, provider: route.provider, modelId: route.modelId, model: route.modelConfig };
  const upReq = buildUpstream(x, outbound, req, target);
  drops.set(o, droppedParams(x.inbound.codec.paramNames, req, upReq.dropped));
  const up = x.trace.upstream(route.provider.base_url, upReq.path, route.providerId);
  o.span = up.span;
  const tUp = performance.now();
  try {
    const res = await x.ctx.dispatcher.send(route.connection?.id ?? route.providerId, route.provider, upReq, { stream: false, signal: cut, extraHeaders: up.headers });
    const text = await res.text();
    o.upstreamMs = performance.now() - tUp;
    if (res.status < 200 || res.status >= 300) {
      o.status = 'failure';
      o.httpStatus = res.status;
      o.errorType = String(res.status);
      up.span.end(res.status, String(res.status));
      return httpFailure(res.status, pickHeaders(res.headers, FORWARDED_ERROR_HEADERS), text);
    }
    const answer = readAnswer(outbound, res.status, text, o, upReq.answerTool);
    up.span.end(res.status, null);
    answers.set(o, answer);
    if (answer.usage === null) await settleEstimate(o, { canonical: req }, answerOf(answer.content));
    return null;
  } catch (err) {
    o.upstreamMs = performance.now() - tUp;
    if (cut.aborted) {
      o.status = 'aborted';
      o.errorType = 'fusion_cut_off';
      up.span.end(null, 'fusion_cut_off');
      return errorFailure(new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'the panel member did not answer within the fusion time limit'));
    }
    return failWith(o, classifyTransportError(err));
  }
}

export async function runFusion(x: Exchange, name: string, combo: ComboConfig, members: readonly Member[], co: Outcome): Promise<void> {
  const panel = panelRequest(x.parsed);
  const quorum = Math.min(combo.quorum ?? Math.ceil(members.length / 2), members.length);
  const cut = new ClientAbort();
  let clientGone = false;
  const onClose = () => {
    if (x.reply.raw.writableFinished) return;
    clientGone = true;
    cut.abort();
  };
  x.reply.raw.on('close', onClose);
  const answers = new Map<Outcome, CanonicalResponse>();
  const drops: PanelDrops = new Map();
  const tFan = performance.now();
  let settled = 0;
  let wake: () => void = () => undefined;
  const enough = new Promise<void>((resolve) => (wake = resolve));
  const timers: NodeJS.Timeout[] = [setTimeout(wake, combo.timeout_ms ?? FUSION_TIMEOUT_MS)];
  let grace = false;
  const onSettled = () => {
    settled++;
    if (settled === members.length) wake();
    else if (!grace && answers.size >= quorum) {
      grace = true;
      timers.push(setTimeout(wake, combo.grace_ms ?? FUSION_GRACE_MS));
    }
  };
  cut.once('abort', wake);
  const running = members.map((m, i) => {
    const req = fitRequest(panel, m.route, x.parsed.model, m.thinking, false);
    return attempt(x, name, i + 1, m, req, co, (o) => collect(x, m, req, o, cut, answers, drops)).finally(onSettled);
  });
  let results: AttemptResult[];
  try {
    await enough;
    cut.abort(); // members still running are cut off
    results = await Promise.all(running);
  } finally {
    for (const t of timers) clearTimeout(t);
    x.reply.raw.off('close', onClose);
  }
  co.upstreamMs = performance.now() - tFan;
  if (clientGone) {
    co.status = 'aborted';
    co.errorType = 'client_closed';
    co.httpStatus = 499;
    if (!x.reply.sent) x.reply.hijack();
    return;
  }
  const candidates = results.flatMap((r) => {
    const a = answers.get(r.outcome);
    const text = a?.content.map((p) => (p.type === 'text' ? p.text : '')).join('') ?? '';
    return a && text ? [{ model: r.record.model, text }] : [];
  });
  if (candidates.length === 0) {
    const last = [...results].reverse().find((r) => r.failure !== null);
    if (last) adopt(co, last);
    co.status = 'failure';
    const f = last?.failure ?? errorFailure(new TollgateError('TOLLGATE_ERR_FUSION_NO_ANSWER', `no member of combo '${name}' answered`));
    co.httpStatus = f.status;
    sendFailure(x.reply, f, x.requestId);
    return;
  }
  const judge = member(x.ctx.config.current, combo.judge ?? combo.models[0]!);
  const req = fitRequest(judgeRequest(x.parsed, candidates, x.stream), judge.route, x.parsed.model, judge.thinking, x.stream);
  const upBefore = co.upstreamMs;
  // The answer is made of the candidates: the client is told what their requests did not carry, not the judge's.
  const dropped = [...new Set(results.flatMap((r) => (answers.has(r.outcome) ? (drops.get(r.outcome) ?? []) : [])))].sort();
  const verdict = await attempt(x, name, members.length + 1, judge, req, co, (o, t0) => forward(x, judge.route, req, o, t0, true, { dropped }));
  co.upstreamMs = upBefore + (verdict.outcome.upstreamMs ?? 0);
  adopt(co, verdict);
  if (verdict.failure !== null) sendFailure(x.reply, verdict.failure, x.requestId);
}
