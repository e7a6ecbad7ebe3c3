// The calls this process published, and the rows an earlier process left in the spool, that the batch writer has not
// reported stored, for the quota (src/accounting/quota.ts): each as its row will be in the quota's read (its provider,
// model, start, total tokens, cost, duration), added to what a read gives until the writer's `written` event names it.
// The budget reads the same list (budget.ts: its cost since each of its windows' starts).

import { BILLED_KINDS, type RecordKind, type UsageRecord } from '../ledger/record.js';
import type { RequestRow } from '../store/rows.js';
import type { ProviderModelSums } from '../store/quota-windows.js';
import { MoneySum, decimalUnits, numberUnits } from '../store/decimal.js';

/** A provider's windows as the quota reads them: the quota's [from, to), daily_requests' month. */
export interface Span {
  readonly from: number;
  readonly to: number;
  readonly secondary?: { readonly from: number; readonly to: number };
}

type Group = { -readonly [K in keyof ProviderModelSums]: ProviderModelSums[K] };

/**
 * A provider's calls added to the list since the start, of them those that went out upstream (`requests`: what a
 * request quota counts), their total tokens and time (counts that only grow).
 */
export interface Tally {
  readonly calls: number;
  readonly requests: number;
  readonly tokens: number;
  readonly ms: number;
}

/** The most a time zone is ahead of UTC (UTC+14:00): how much earlier than UTC's a budget's local day or month starts. */
const KEPT_BEFORE_MS = 14 * 3_600_000;

/** Slots a list starts with; it doubles when full. */
const FIRST_SLOTS = 1024;
/** The most units a call's cost is kept in as a number (past it, in a bigint of its own). */
const SAFE_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

export class UnstoredCalls {
  /** Each call's slot, by request id: its columns are kept by slot in typed arrays (about 0.1 KB a call, not 0.3). */
  #slots = new Map<string, number>();
  #ids: (string | undefined)[] = [];
  /** Its provider and model (an index into #keys); -1: a free slot. */
  #key = new Int32Array(FIRST_SLOTS).fill(-1);
  /** Its row's `ts`: the request's start. */
  #at = new Float64Array(FIRST_SLOTS);
  #tokens = new Float64Array(FIRST_SLOTS);
  /** Its cost in 10^-12 USD, an integer; NaN for one past SAFE_UNITS either way, kept in #bigCost. */
  #cost = new Float64Array(FIRST_SLOTS);
  #bigCost = new Map<number, bigint>();
  #ms = new Float64Array(FIRST_SLOTS);
  /** 1: its request went out upstream (a request quota counts it); 0: refused before any call. */
  #dispatched = new Uint8Array(FIRST_SLOTS);
  #free: number[] = [];
  /** Slots used so far: every slot at or past it is free. */
  #high = 0;
  /**
   * The providers and models of the calls held, each once, with how many calls use it: one no call uses any more is
   * forgotten (a model name is client input under `allow_unlisted_models`), its index used again.
   */
  readonly #keys: ({ readonly provider: string; readonly model: string; uses: number } | undefined)[] = [];
  readonly #keyOf = new Map<string, number>();
  readonly #freeKeys: number[] = [];
  #published = 0;
  /** Each provider's Tally: what the quota's routing verdict adds to a snapshot (quota-routing.ts). */
  readonly #tallies = new Map<string, { calls: number; requests: number; tokens: number; ms: number }>();

  /** Records published so far (a count that only grows). */
  get published(): number {
    return this.#published;
  }

  /** A provider's calls added so far (none: undefined). */
  tally(provider: string): Tally | undefined {
    return this.#tallies.get(provider);
  }

  /** Every provider's tally now, copied: what a snapshot built now counts. */
  tallies(): Map<string, Tally> {
    return new Map([...this.#tallies].map(([p, t]) => [p, { ...t }]));
  }

  /** What the list holds: its calls, the slots of its arrays, the providers and models it keeps (tests, diagnostics). */
  get footprint(): { calls: number; slots: number; keys: number } {
    return { calls: this.#slots.size, slots: this.#key.length, keys: this.#keyOf.size };
  }

  /** A call ended (its record was published): counted until its row is stored. */
  add(r: UsageRecord): void {
    // What its row will hold (src/store/rows.ts): the start as `ts`, the cost to the 12 decimals stored.
    this.#put(r.requestId, { provider: r.provider, model: r.model, at: r.startedAt, tokens: r.totalTokens, cost: units(r.cost.cost), ms: r.latency.totalMs, dispatched: r.dispatched });
    this.#published++;
  }

  /**
   * A row an earlier process left in the spool (read after the start: src/store/leftovers.ts): counted as this
   * process's own calls are until the writer reports it stored, so a restart while the store refuses inserts does not
   * read as usage given back. Only billed kinds, as `published` takes them (BILLED_KINDS); a row without the columns
   * it needs is passed over. A row without `dispatched` (an earlier version's) went out, as the store reads it.
   */
  addRow(row: RequestRow): void {
    const { request_id: id, kind, provider, model, ts, total_tokens: tokens, cost, duration_ms: ms, dispatched } = row;
    if (typeof id !== 'string' || typeof provider !== 'string' || typeof model !== 'string' || typeof ts !== 'number') return;
    if (!BILLED_KINDS.includes(kind as RecordKind)) return;
    this.#put(id, { provider, model, at: ts, tokens: Number(tokens) || 0, cost: rowUnits(cost), ms: Number(ms) || 0, dispatched: dispatched !== false && dispatched !== 0 });
    this.#published++;
  }

  #put(id: string, c: { provider: string; model: string; at: number; tokens: number; cost: bigint; ms: number; dispatched: boolean }): void {
    let slot = this.#slots.get(id);
    if (slot === undefined) {
      slot = this.#free.pop() ?? this.#high++;
      if (slot >= this.#key.length) this.#resize(this.#key.length * 2);
      this.#slots.set(id, slot);
      this.#ids[slot] = id;
      let tally = this.#tallies.get(c.provider);
      if (tally === undefined) this.#tallies.set(c.provider, (tally = { calls: 0, requests: 0, tokens: 0, ms: 0 }));
      tally.calls++;
      if (c.dispatched) tally.requests++;
      tally.tokens += c.tokens;
      tally.ms += c.ms;
    } else this.#release(this.#key[slot]!);
    this.#key[slot] = this.#use(c.provider, c.model);
    this.#at[slot] = c.at;
    this.#tokens[slot] = c.tokens;
    this.#ms[slot] = c.ms;
    this.#dispatched[slot] = c.dispatched ? 1 : 0;
    this.#bigCost.delete(slot);
    const fits = c.cost <= SAFE_UNITS && c.cost >= -SAFE_UNITS;
    this.#cost[slot] = fits ? Number(c.cost) : Number.NaN;
    if (!fits) this.#bigCost.set(slot, c.cost);
  }

  /** The index of a provider and model, one more call using it. */
  #use(provider: string, model: string): number {
    const k = `${provider}\u0000${model}`;
    let i = this.#keyOf.get(k);
    if (i === undefined) {
      i = this.#freeKeys.pop() ?? this.#keys.length;
      this.#keys[i] = { provider, model, uses: 0 };
      this.#keyOf.set(k, i);
    }
    this.#keys[i]!.uses++;
    return i;
  }

  /** One call fewer uses key `i`: forgotten when none does. */
  #release(i: number): void {
    const key = this.#keys[i]!;
    if (--key.uses > 0) return;
    this.#keyOf.delete(`${key.provider}\u0000${key.model}`);
    this.#keys[i] = undefined;
    this.#freeKeys.push(i);
  }

  #drop(slot: number): void {
    this.#slots.delete(this.#ids[slot]!);
    this.#ids[slot] = undefined;
    this.#release(this.#key[slot]!);
    this.#key[slot] = -1;
    this.#bigCost.delete(slot);
    this.#free.push(slot);
  }

  /**
   * After calls were dropped: when a quarter or less of the slots used so far hold a call, the calls move to the first
   * slots of arrays twice their number (FIRST_SLOTS at least), so a drained backlog's memory is given back, and a read
   * walks the calls held, not the backlog's slots, while new calls keep coming.
   */
  #compact(): void {
    const live = this.#slots.size;
    if (this.#high <= FIRST_SLOTS || live * 4 > this.#high) return;
    const from = { key: this.#key, at: this.#at, tokens: this.#tokens, cost: this.#cost, ms: this.#ms, dispatched: this.#dispatched, big: this.#bigCost };
    const slots = new Map<string, number>();
    const ids: string[] = [];
    this.#bigCost = new Map();
    this.#resize(Math.max(FIRST_SLOTS, 2 ** Math.ceil(Math.log2(Math.max(1, live * 2)))), false);
    for (const [id, old] of this.#slots) {
      const slot = ids.push(id) - 1;
      slots.set(id, slot);
      this.#key[slot] = from.key[old]!;
      this.#at[slot] = from.at[old]!;
      this.#tokens[slot] = from.tokens[old]!;
      this.#cost[slot] = from.cost[old]!;
      this.#ms[slot] = from.ms[old]!;
      this.#dispatched[slot] = from.dispatched[old]!;
      const big = from.big.get(old);
      if (big !== undefined) this.#bigCost.set(slot, big);
    }
    this.#slots = slots;
    this.#ids = ids;
    this.#free = [];
    this.#high = ids.length;
  }

  /** Arrays of `n` slots, the calls held kept in theirs (`keep`), or none (the caller moves them). */
  #resize(n: number, keep = true): void {
    const moved = <A extends Float64Array | Int32Array | Uint8Array>(from: A, to: A): A => (keep ? (to.set(from), to) : to);
    this.#key = moved(this.#key, new Int32Array(n).fill(-1));
    this.#at = moved(this.#at, new Float64Array(n));
    this.#tokens = moved(this.#tokens, new Float64Array(n));
    this.#cost = moved(this.#cost, new Float64Array(n));
    this.#ms = moved(this.#ms, new Float64Array(n));
    this.#dispatched = moved(this.#dispatched, new Uint8Array(n));
  }

  #addCost(sum: MoneySum, slot: number): void {
    const c = this.#cost[slot]!;
    if (Number.isNaN(c)) sum.addUnits(this.#bigCost.get(slot)!);
    else sum.addSmallUnits(c);
  }

  /** These request ids' rows are stored: a read holds them from now on. */
  stored(ids: readonly string[]): void {
    for (const id of ids) {
      const slot = this.#slots.get(id);
      if (slot !== undefined) this.#drop(slot);
    }
    this.#compact();
  }

  /**
   * `stored[i]` (the store's figure for the window, USD; none: 0) plus the cost of the calls that started at or after each of
   * `froms` (the budget's windows), in one exact sum each: not the two totals added as floats.
   */
  costSince(froms: readonly number[], stored: readonly number[] = []): number[] {
    const out = froms.map((_, i) => new MoneySum().add(stored[i] ?? 0));
    for (let slot = 0; slot < this.#high; slot++) {
      if (this.#key[slot] === -1) continue;
      for (let i = 0; i < froms.length; i++) if (this.#at[slot]! >= froms[i]!) this.#addCost(out[i]!, slot);
    }
    return out.map((u) => u.value);
  }

  /**
   * The calls as groups like the read's (one per provider and model): each in its provider's windows as its row will
   * be. A call older than `oldest` (every window and this UTC month) by more than a time zone can be ahead of UTC
   * (KEPT_BEFORE_MS) counts nowhere any more and is forgotten (a row the store refused, or one dropped from a full
   * spool, is never reported stored); within it, the budget's local day and month, which the list also feeds, may
   * still count it (a zone east of UTC starts its month before UTC's). Calls of providers `spans` lacks: none.
   */
  groups(spans: ReadonlyMap<string, Span>, today: number, month: number, oldest: number): ProviderModelSums[] {
    // Each provider and model's group, with its costs (this window, today, this month) made numbers once at the end.
    const out = new Map<number, { g: Group; cost: MoneySum; today: MoneySum; month: MoneySum }>();
    for (let slot = 0; slot < this.#high; slot++) {
      const key = this.#key[slot]!;
      if (key === -1) continue;
      const at = this.#at[slot]!;
      if (at < oldest - KEPT_BEFORE_MS) {
        this.#drop(slot);
        continue;
      }
      const { provider, model } = this.#keys[key]!;
      const w = spans.get(provider);
      if (w === undefined) continue;
      let sums = out.get(key);
      if (sums === undefined) {
        // recentRows: the connection-problem flag reads stored rows only (`recentOutcomes`).
        const g: Group = { provider, model, rows: 0, tokens: 0, cost: 0, durationMs: 0, oldest: null, dispatched: 0, secondaryCalls: 0, todayCost: 0, monthCost: 0, recentRows: 0 };
        sums = { g, cost: new MoneySum(), today: new MoneySum(), month: new MoneySum() };
        out.set(key, sums);
      }
      const g = sums.g;
      const dispatched = this.#dispatched[slot]!;
      if (at >= w.from && at < w.to) {
        g.rows++;
        g.dispatched += dispatched;
        g.tokens += this.#tokens[slot]!;
        this.#addCost(sums.cost, slot);
        g.durationMs += this.#ms[slot]!;
        if (g.oldest === null || at < g.oldest) g.oldest = at;
      }
      if (w.secondary !== undefined && at >= w.secondary.from && at < w.secondary.to) g.secondaryCalls += dispatched;
      if (at >= today) this.#addCost(sums.today, slot);
      if (at >= month) this.#addCost(sums.month, slot);
    }
    this.#compact(); // after the walk: it moves the calls to other slots
    return [...out.values()].map(({ g, cost, today: t, month: m }) => Object.assign(g, { cost: cost.value, todayCost: t.value, monthCost: m.value }));
  }
}

/** A call's cost in 10^-12 USD; 0 for one that is not a finite number (a row the spool could not say it for). */
const units = (usd: number): bigint => (Number.isFinite(usd) ? numberUnits(usd) : 0n);

/** A row's cost in 10^-12 USD: its Decimal text read as it is (every digit, no double between), else as a number. */
function rowUnits(cost: unknown): bigint {
  if (typeof cost !== 'string') return units(Number(cost));
  try {
    return decimalUnits(cost);
  } catch {
    return units(Number(cost)); // not plain decimal text ('1e-7', damaged): as a number, 0 when none
  }
}
