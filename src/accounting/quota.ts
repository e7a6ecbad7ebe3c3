// The quota engine at work: for every provider, its quota kind's window (quota/kinds.ts) summed from the ClickHouse
// record (store/aggregate.ts: rollup + raw edges) plus the records this process published and has not stored yet (as
// the budget counts them), merged with the provider's usage source where one is configured, with today's and this
// month's cost, the connection's cooldowns, and a flag when the provider sits at 0% while its requests fail (a
// connection problem: a refused key, the provider down, OAuth to reconnect). Snapshots are cached briefly (replicas
// read the same ClickHouse, so they agree); `exhausted()` and `resetsAt()` answer routing from the latest one.

import type { Config } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { providerWindows, recentOutcomes, type ProviderModelSums, type RecentOutcomes } from '../store/quota-windows.js';
import { EdgeCache } from '../store/quota-edges.js';
import type { Store } from '../store/client.js';
import { BILLED_KINDS, type RecordKind, type UsageRecord } from '../ledger/record.js';
import { planQuota, quotaConfigOf, sameWindows } from '../config/quota-kinds.js';
import { UsageSources } from './quota-source.js';
import { DAY_MS, HOUR_MS, monthStart } from '../core/windows.js';
import { INSERT_WAIT_MS, type WriteFence } from '../store/write-fence.js';
import { budgetWindows, type SharedSpend } from './budget.js';
import { UnstoredCalls, type Span, type Tally } from './unstored.js';
import { QuotaVerdicts } from './quota-routing.js';
import { sumOf } from './quota-sums.js';
import { quotaEntries, type QuotaEntry, type QuotaProvider } from './quota-entry.js';

export type { ConnectionProblem } from './quota-connection.js';
export type { QuotaEntry } from './quota-entry.js';

/** The rows that use a provider's quota: every upstream call (pings included), not the combo summaries. */
export const QUOTA_KINDS_COUNTED: readonly RecordKind[] = BILLED_KINDS;
/** Look-back for the connection-problem flag. */
const RECENT_MS = 15 * 60_000;

/** What one read of the store gives: the stored figures, and what adding the calls not stored yet to them needs. */
interface Basis {
  readonly now: number;
  readonly providers: readonly QuotaProvider[];
  readonly read: readonly ProviderModelSums[];
  readonly spans: ReadonlyMap<string, Span>;
  readonly today: number;
  readonly month: number;
  /** Every window's start and this month's: a call before it counts nowhere. */
  readonly earliest: number;
  /** No insert of this process's ran beside the read: none of the calls not stored yet is in what it read. */
  readonly exact: boolean;
  /** The recent calls of the providers at 0 % in the stored figures (the connection-problem flag). */
  readonly recent: ReadonlyMap<string, RecentOutcomes>;
  readonly spend: SharedSpend | null;
  /** The list's tallies when the read began: what a snapshot that cannot take the list (not `exact`) counts. */
  readonly tallies: ReadonlyMap<string, Tally>;
  /** Batches reported stored (`#batches`) when the read began: one stored since holds calls the read and list lack. */
  readonly batches: number;
}

/**
 * A snapshot: `changes`, the changes (`#changes`) it was computed after; `published`, the records published it counts
 * (the calls not stored yet it added); `basis`, its read.
 */
interface Snapshot {
  readonly at: number;
  readonly entries: QuotaEntry[];
  readonly changes: number;
  readonly published: number;
  readonly basis: Basis;
  /** The config reloads (`#reloads`) it was computed after. */
  readonly reloads: number;
  /** What its entries count: the read with the calls not stored yet it took, and the list's tallies of those calls. */
  readonly sums: readonly ProviderModelSums[];
  readonly counted: ReadonlyMap<string, Tally>;
}

export class QuotaService {
  readonly #store: Store;
  readonly #config: () => Config;
  readonly #now: () => number;
  readonly #sources: UsageSources;
  readonly #cacheMs: number;
  readonly #staleMs: number;
  readonly #settleWaitMs: number;
  /** The clock is the real one: "now" is the present, so the current hour can be read from the rollup. */
  readonly #realClock: boolean;
  #snapshot: Snapshot | null = null;
  /** The batch writer: whether an insert ran when a read began, for the spend it gives the budget (SharedSpend). */
  readonly #fence: WriteFence | null;
  /**
   * What a snapshot is computed from changed: this process stored rows (`stored`), or a usage source answered in the
   * background. A snapshot computed before a change is not served again.
   */
  #changes = 0;
  /** Config reloads so far (`reconfigured`): a snapshot of an earlier config is not served, even to a caller in a hurry. */
  #reloads = 0;
  /** Batches of rows the writer reported stored so far (`stored`). */
  #batches = 0;
  /**
   * Calls this process made whose rows the writer has not reported stored: each snapshot adds them to what it read, so
   * a crossing this process's own traffic makes is seen before its batch lands.
   */
  readonly #unstored: UnstoredCalls;
  /** The list is this service's own (fed by `published`, cleared by `stored`); a shared one is its feeder's to clear. */
  readonly #ownsList: boolean;
  /** The computation in flight, and the changes (`#changes`) it was started after. */
  #computing: { readonly after: number; readonly published: number; readonly entries: Promise<QuotaEntry[]>; readonly reloads: number } | null = null;
  /** Routing's verdicts: the latest snapshot's entries with this process's calls since and in flight added. */
  readonly #verdicts: QuotaVerdicts;
  /** The rolling windows' partial first hours that have ended, read once and checked on every read (docs/quota.md). */
  readonly #edges = new EdgeCache();

  /** `unstored`: the calls not stored yet, when another keeps the list (the budget's: app.ts); else its own (`published`). */
  constructor(store: Store, config: () => Config, opts: { now?: () => number; cacheMs?: number; staleMs?: number; settleWaitMs?: number; fence?: WriteFence; unstored?: UnstoredCalls } = {}) {
    this.#unstored = opts.unstored ?? new UnstoredCalls();
    this.#ownsList = opts.unstored === undefined;
    this.#verdicts = new QuotaVerdicts(this.#unstored, opts.now ?? Date.now);
    this.#store = store;
    this.#fence = opts.fence ?? null;
    this.#config = config;
    this.#now = opts.now ?? Date.now;
    this.#realClock = opts.now === undefined;
    this.#sources = new UsageSources(this.#now, () => this.#changes++);
    this.#cacheMs = opts.cacheMs ?? 1000;
    this.#staleMs = opts.staleMs ?? 10_000;
    this.#settleWaitMs = opts.settleWaitMs ?? INSERT_WAIT_MS;
  }

  /** The latest snapshot's entries (null before the first): what the gauges show, never a query. */
  get latest(): readonly QuotaEntry[] | null {
    return this.#snapshot?.entries ?? null;
  }

  /**
   * The budget's stored spend from the latest snapshot's read (every provider's cost today and this month),
   * for the alert evaluator to hand to `BudgetService.refresh` right after `entries({ current: true })`: one read a
   * second instead of two under load. Null before a snapshot, or when it holds no such figures (no provider, nothing
   * read; or a budget whose day and month are not UTC's: the budget reads for itself then).
   */
  get spend(): SharedSpend | null {
    return this.#snapshot?.basis.spend ?? null;
  }

  /**
   * Whether `entries` (what `entries()` gave) hold every call published so far, the calls not stored yet added: not
   * when inserts began beside both of its reads (the stored figures alone, short of those calls), nor when a newer
   * snapshot has replaced them.
   */
  complete(entries: readonly QuotaEntry[]): boolean {
    const snap = this.#snapshot;
    return snap !== null && snap.entries === entries && snap.basis.exact;
  }

  /**
   * Whether the provider's quota is used up: the latest snapshot's figures, with this process's calls since and its
   * combo attempts in flight added (quota-routing.ts). A snapshot older than the cache starts a new one in the
   * background (not waited for): a replica without traffic of its own computed none since the evaluator's last look
   * (up to 15 s), and other replicas' calls would go on reaching a provider they used up.
   */
  exhausted(providerId: string): boolean {
    const snap = this.#snapshot;
    if (snap !== null && this.#computing === null && this.#now() - snap.at >= this.#cacheMs) void this.entries().catch(() => undefined);
    return this.#verdicts.exhausted(providerId);
  }

  // QuotaGate.resetsAt (routing/router.ts): exhaustedUntil of a provider `exhausted` says is used up.
  resetsAt(providerId: string): number | null {
    return this.#verdicts.resetsAt(providerId);
  }

  // QuotaGate.reserve (routing/router.ts): a combo attempt to the provider counts in flight until its record is published.
  reserve(providerId: string): () => void {
    return this.#verdicts.reserve(providerId);
  }

  /**
   * The config was reloaded (app.ts): no snapshot computed before is served again, and routing takes the new quotas at
   * once: a provider whose windows are the same (a limit changed) is evaluated anew from what the last snapshot counts
   * (its read with the calls not stored yet it took, routing adding the calls since: never the read with the list now,
   * which lacks the calls stored since the read); one whose windows changed (or a new one) has no verdict, not
   * skipped, until the read begun now has its figures.
   */
  reconfigured(): void {
    this.#changes++;
    this.#reloads++;
    const snap = this.#snapshot;
    if (snap === null) return;
    const b = snap.basis;
    const providers = Object.entries(this.#config().providers).flatMap(([id, p]) => {
      const q = quotaConfigOf(p) ?? { kind: 'unlimited' as const };
      const plan = planQuota(q, b.now);
      const old = b.providers.find((o) => o.id === id)?.plan;
      return old !== undefined && sameWindows(old, plan) ? [{ id, p, q, plan }] : [];
    });
    const evaluated = quotaEntries(this.#sources, { providers, sums: snap.sums, now: b.now, recent: b.recent });
    void evaluated.then((entries) => this.#snapshot === snap && this.#verdicts.adopt(entries, snap.counted), () => undefined);
    // The new config's read: begun now, or once the one of the config before has ended (`entries`).
    void this.entries().catch(() => undefined);
  }

  /** A record was published: counted in the quota's figures until its row is stored (the gateway feeds a shared list: app.ts). */
  published(r: UsageRecord): void {
    if (QUOTA_KINDS_COUNTED.includes(r.kind)) this.#unstored.add(r);
  }

  /**
   * Rows this process recorded are in ClickHouse now (the batch writer's `written`, with their request ids): the next
   * snapshot reads them, and no longer adds them itself (a shared list is cleared by its feeder, the budget: app.ts).
   */
  stored(ids: readonly string[] = []): void {
    if (this.#ownsList) this.#unstored.stored(ids);
    this.#changes++;
    this.#batches++;
  }

  /**
   * One entry per configured provider, from a snapshot at most `cacheMs` old (stamped when its computation ends) and
   * computed after the last change (`#changes`). An older snapshot is recomputed by the first caller; callers that
   * arrive while that computation runs get the previous snapshot (if it is under `staleMs` old) instead of queueing
   * behind it, unless they ask for `current` figures (the alert evaluator, which looks because rows were stored or
   * records published): they get a snapshot computed after every change so far, with every record published so far
   * (added to the cached read when it can take them, without reading again).
   */
  entries(opts: { readonly current?: boolean } = {}): Promise<QuotaEntry[]> {
    const now = this.#now();
    const snap = this.#snapshot;
    const changes = this.#changes;
    const published = this.#unstored.published;
    const current = opts.current === true;
    if (snap !== null && snap.changes === changes && now - snap.at < this.#cacheMs) {
      if (!current || (snap.published === published && snap.basis.exact)) return Promise.resolve(snap.entries);
      // Only records published since: the same read with them added, no read of the store.
      if (snap.basis.exact) return this.#rebuild(snap);
    }
    const running = this.#computing;
    if (running !== null) {
      // One of the config before a reload is waited for, and one of the new config made then.
      const before = running.reloads !== this.#reloads;
      if (current || before) {
        if (!before && running.after === changes && running.published === published) return running.entries;
        const again = () => this.entries(opts);
        return running.entries.then(again, again);
      }
      return snap !== null && now - snap.at < this.#staleMs && snap.reloads === this.#reloads ? Promise.resolve(snap.entries) : running.entries;
    }
    const reloads = this.#reloads;
    const computed = this.#settledRead()
      .then(async ({ basis, changes: after }) => ({ basis, after, ...(await this.#build(basis)) }))
      .then(
        ({ basis, after, entries, published: counted, tallies, sums }) => {
          this.#snapshot = { at: this.#now(), entries, changes: after, published: counted, basis, reloads, sums, counted: tallies };
          // One of the config before a reload is not routing's: the reload's own verdicts stand until the next.
          if (reloads === this.#reloads) this.#verdicts.adopt(entries, tallies);
          return entries;
        },
        // The store is down: the last snapshot stands (routing keeps its exhausted flags) until a read succeeds, with this
        // process's calls since added when its read can still take them: not when rows were stored since it (they left
        // the list, the read lacks them); routing adds the calls since to it all the same (quota-routing.ts).
        (err: unknown) => {
          if (snap !== null) return snap.basis.exact && snap.basis.batches === this.#batches ? this.#rebuild(snap) : snap.entries;
          throw new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', 'quota cannot be computed: ClickHouse does not answer and no earlier figures are known', { cause: err });
        },
      )
      .finally(() => (this.#computing = null));
    this.#computing = { after: changes, published, entries: computed, reloads };
    return computed;
  }

  /**
   * The read, begun once no insert of this process's runs and none begins while it reads (WriteFence.hold: a backlog
   * going in back to back left it no moment), and made again (once) if one began beside it all the same: such a read
   * cannot take the calls not stored yet (some may be in what it read), so its figures are the stored ones alone, short
   * of those calls; a quota seen back under 10 % for that moment is a false reset alert, an exhausted provider routed
   * to. An insert beside the second read too leaves it so (that insert's end makes the next snapshot read again), as
   * does one that outlasts the wait (INSERT_WAIT_MS). `changes`: the changes (`#changes`) the read kept was begun after.
   */
  async #settledRead(): Promise<{ basis: Basis; changes: number }> {
    for (let attempt = 1; ; attempt++) {
      const release = this.#fence === null ? undefined : await this.#fence.hold(this.#settleWaitMs);
      const changes = this.#changes;
      const basis = await this.#read(this.#now()).finally(release);
      if (basis.exact || attempt === 2) return { basis, changes };
    }
  }

  /**
   * Every provider from one read: the rollups (whole days and hours, from the earliest window start; the current hour
   * included) and the raw rows of the partial first hours of the windows that do not start on an hour; and a second,
   * only when a provider at 0% made calls in the last 15 minutes, for the connection-problem flag.
   */
  async #read(now: number): Promise<Basis> {
    const cfg = this.#config();
    const providers = Object.entries(cfg.providers).map(([id, p]) => {
      const q = quotaConfigOf(p) ?? { kind: 'unlimited' as const };
      return { id, p, q, plan: planQuota(q, now) };
    });
    const month = monthStart(now);
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    const earliest = Math.min(month, ...providers.map(({ plan }) => Math.min(plan.from, plan.secondary?.from ?? plan.from)));
    const ceil = (t: number) => Math.ceil(t / HOUR_MS) * HOUR_MS;
    // A window that ends now ends where the read does: its end is then no edge inside the read, which would part the
    // current day from the rest of the daily rollup and have the read take today from the hourly one (a branch more).
    const end = (to: number) => (to >= now ? now + 1 : to);
    // The windows that do not start on an hour take their partial first hour from the raw rows, in the same read.
    const partial = providers.filter(({ plan }) => plan.from % HOUR_MS !== 0).map(({ id, plan }) => ({ provider: id, from: plan.from, to: Math.min(ceil(plan.from), now + 1) }));
    const start = Math.floor(earliest / HOUR_MS) * HOUR_MS;
    const fence = this.#fence;
    const tallies = this.#unstored.tallies();
    const batches = this.#batches;
    const insertsStarted = fence?.insertsStarted ?? 0;
    const clean = fence !== null && insertsStarted === fence.insertsEnded;
    const { groups: read, cost: all } = await providerWindows(this.#store, {
      start, to: now + 1, today, month, kinds: QUOTA_KINDS_COUNTED, openEnd: this.#realClock,
      windows: providers.map(({ id, plan }) => ({ provider: id, from: ceil(plan.from), to: end(plan.to), ...(plan.secondary ? { secondary: { from: plan.secondary.from, to: end(plan.secondary.to) } } : {}) })),
      edges: partial, recentFrom: now - RECENT_MS, edgeCache: this.#edges,
    });
    // The calls not stored yet are added to it when no insert of this process's ran beside the read (one that did may
    // have put some of them in what was read before their `written` event took them off the list): the figures are then
    // what is stored, as before, and the insert's end makes the next snapshot read again.
    const exact = fence === null || (clean && fence.insertsStarted === insertsStarted);
    // The windows the calls not stored yet are counted in: a window that ends now stays open, since a snapshot takes
    // the calls published after its read too (#rebuild: the evaluator's current figures; the figures while the store
    // is down). Cut at the read's end, those calls counted nowhere until the next read.
    const open = (to: number) => (to >= now ? Number.POSITIVE_INFINITY : to);
    const spans = new Map<string, Span>(providers.map(({ id, plan }) => [id, { from: plan.from, to: open(plan.to), ...(plan.secondary ? { secondary: { from: plan.secondary.from, to: open(plan.secondary.to) } } : {}) }]));
    // Every provider's cost today and this month is the budget's stored spend when its day and month are UTC's (a
    // budget in UTC, the default, or in a zone at UTC's offset then): the same rows, the billed kinds. In another zone
    // its day starts within a UTC day, which this read takes whole from the daily rollup; the budget reads for itself.
    const budget = budgetWindows(cfg, now);
    const spend = all === null || budget.day.from !== today || budget.month.from !== month ? null : { froms: [today, month], costs: [all.today, all.month], insertsStarted, clean };
    // "At 0%": no tokens in the window at all (a failing request may still count as a request or take time). The
    // recent calls of every such provider come from one read, and only of those that made calls lately by the rollups
    // (a configured provider nobody uses costs no read), when the read above reached back that far.
    const lately = (mine: readonly ProviderModelSums[]) => start > now - RECENT_MS || mine.some((g) => g.recentRows > 0);
    const atZero = providers.filter(({ id }) => {
      const mine = read.filter((g) => g.provider === id);
      return sumOf(mine).tokens === 0 && lately(mine);
    }).map(({ id }) => id);
    const recent = await recentOutcomes(this.#store, { providers: atZero, from: now - RECENT_MS, to: now + 1, kinds: QUOTA_KINDS_COUNTED });
    return { now, providers, read, spans, today, month, earliest, exact, recent, spend, tallies, batches };
  }

  /**
   * The entries of a read, with the calls not stored yet added when it can take them (`exact`), their count, and the
   * tallies of the calls they hold (routing adds the calls since: quota-routing.ts): the list's now when it was added,
   * else its tallies when the read began (a call published since then counts there, even if an insert beside the read
   * put it in what was read too: counted twice rather than not at all, until the next snapshot).
   */
  async #build(b: Basis): Promise<{ entries: QuotaEntry[]; published: number; tallies: ReadonlyMap<string, Tally>; sums: readonly ProviderModelSums[] }> {
    const published = this.#unstored.published;
    const tallies = b.exact ? this.#unstored.tallies() : b.tallies;
    const sums = b.exact ? [...b.read, ...this.#unstored.groups(b.spans, b.today, b.month, b.earliest)] : b.read;
    const entries = await quotaEntries(this.#sources, { providers: b.providers, sums, now: b.now, recent: b.recent });
    return { entries, published, tallies, sums };
  }

  /** The snapshot's read again, with the records published since it was built: the snapshot, unless a newer one came. */
  async #rebuild(snap: Snapshot): Promise<QuotaEntry[]> {
    const { entries, published, tallies, sums } = await this.#build(snap.basis);
    if (this.#snapshot === snap) {
      this.#snapshot = { ...snap, entries, published, sums, counted: tallies };
      if (snap.reloads === this.#reloads) this.#verdicts.adopt(entries, tallies);
    }
    return entries;
  }
}
