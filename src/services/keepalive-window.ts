// The keep-alive rule (docs/connections.md, "Keep-alive pings"; told in full at the top of keepalive.ts) as pure
// functions, no I/O: the window over upstream-call start times, and the ping itself (its model and request).

import type { ProviderConfig } from '../config/types.js';
import type { UsageRecord } from '../ledger/record.js';
import type { CanonicalRequest } from '../wire/canonical.js';
import type { UpstreamCall } from '../store/keepalive.js';
import { DAY_MS, parseWindow as windowLength } from '../core/windows.js';

export const MIN_WINDOW_MS = 1000;

/** `30m`, `5h`, `2s`, `1d` in milliseconds (core/windows.ts), at least MIN_WINDOW_MS (`0s` too). */
export function parseWindow(s: string): number {
  return /^0+[smhd]$/.test(s) ? MIN_WINDOW_MS : Math.max(MIN_WINDOW_MS, windowLength(s));
}

/** One connection's window as far as the gateway can tell; `prevEnd` is the end of the one before (-Infinity: none). */
export interface Window {
  readonly start: number;
  readonly end: number;
  readonly prevEnd: number;
}

/**
 * Whether a record is an upstream call that can open a window: one that went out (a request refused before its call,
 * or whose connection was never made, has its connection chosen but never reached the provider; `dispatched` absent
 * in a stored row read from before migration 28, which counted it as a call).
 */
export function opensWindow(r: Pick<UsageRecord, 'kind' | 'connection' | 'status'> & { readonly dispatched?: boolean }): boolean {
  return r.connection !== '' && r.kind !== 'combo' && r.dispatched !== false && !(r.kind === 'keepalive' && r.status !== 'success');
}

/** The window after an upstream call that started at `t` (returns `w` itself when nothing changes). */
export function advance(w: Window | null, t: number, windowMs: number): Window {
  if (w === null || t >= w.end) return { start: t, end: t + windowMs, prevEnd: w?.end ?? -Infinity };
  if (t >= w.start || t < w.prevEnd) return w;
  // Seen late, but started before the call that opened `w` and after the window before ended: it opened a window.
  return w.start < t + windowMs ? { start: t, end: t + windowMs, prevEnd: w.prevEnd } : { ...w, prevEnd: t + windowMs };
}

/** The rule replayed over upstream-call start times in ascending order: the last window (open or ended), or null. */
export function replay(starts: Iterable<number>, windowMs: number): Window | null {
  let w: Window | null = null;
  for (const t of starts) w = advance(w, t, windowMs);
  return w;
}

/**
 * Where the replay over the record starts: a day back (two windows for a longer one), on a multiple of the window, so
 * that replicas reading moments apart replay the same calls and agree on the window (and so on the ping's claim).
 */
export function replayFrom(now: number, windowMs: number): number {
  return Math.floor((now - Math.max(DAY_MS, 2 * windowMs)) / windowMs) * windowMs;
}

/** Calls kept until their rows are stored; beyond this many the oldest go (a store down for long: rows dropped). */
const MAX_UNSTORED = 10_000;

/**
 * This process's window-opening calls whose rows ClickHouse does not hold yet (the writer inserts every flush_ms), by
 * request id: the window read from the record before a ping is replayed over the stored calls and these, so a call
 * of this replica that is not stored yet counts, and the record's window is never older than what this replica knows.
 */
export class UnstoredCalls {
  readonly #calls = new Map<string, { readonly connection: string; readonly t: number }>();

  add(requestId: string, connection: string, t: number): void {
    this.#calls.set(requestId, { connection, t });
    if (this.#calls.size > MAX_UNSTORED) this.#calls.delete(this.#calls.keys().next().value!);
  }

  written(ids: readonly string[]): void {
    if (this.#calls.size > 0) for (const id of ids) this.#calls.delete(id);
  }

  /** `stored` (ascending) with this connection's unstored calls since `from`, ascending (duplicates are harmless). */
  merge(connection: string, stored: readonly number[], from: number): readonly number[] {
    const own: number[] = [];
    for (const c of this.#calls.values()) if (c.connection === connection && c.t >= from) own.push(c.t);
    return own.length === 0 ? stored : [...stored, ...own].sort((a, b) => a - b);
  }
}

/**
 * A connection's window by the record: its stored calls since `from` that went out (oldest first) with this process's
 * calls not stored yet, replayed; and the starts of its stored pings, every one (a ping that never went out is a try
 * too: the claim's key counts it).
 */
export function windowOfRecord(o: { calls: readonly UpstreamCall[]; unstored: UnstoredCalls; id: string; connection: string; from: number; windowMs: number }): { window: Window | null; pings: number[] } {
  const opening = o.calls.filter((r) => opensWindow({ kind: r.kind, status: r.status, connection: o.connection, dispatched: r.dispatched })).map((r) => r.t);
  return { window: replay(o.unstored.merge(o.id, opening, o.from), o.windowMs), pings: o.calls.filter((r) => r.kind === 'keepalive').map((r) => r.t) };
}

/** The model a connection pings: `keepalive.model`, else the provider's first listed chat model, else its first. */
export function pingModel(p: ProviderConfig): string | null {
  if (p.keepalive.model !== undefined) return p.keepalive.model;
  const ids = Object.keys(p.models);
  return ids.find((id) => p.models[id]!.kind === 'llm') ?? ids[0] ?? null;
}

/** The fewest output tokens each format accepts: the Responses API refuses a max_output_tokens below 16. */
const MIN_MAX_TOKENS: Partial<Record<ProviderConfig['format'], number>> = { 'openai-responses': 16 };

/** The smallest request the format takes: one short user turn, one output token (or the format's least). */
export function pingRequest(model: string, format: ProviderConfig['format']): CanonicalRequest {
  return { model, system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], maxTokens: MIN_MAX_TOKENS[format] ?? 1, stream: false };
}
