// The in-process alert evaluator at work (DESIGN.md decision 8): a timer, plus a check shortly after each recorded
// request (so a crossing is seen within a second), evaluates the rules (evaluator.ts) on the same numbers the API
// serves (QuotaService, BudgetService, the rollup). Each new alert is written to ClickHouse first (its id derives
// from its key, so the row is the proof it fired: a restart loads the keys and fires nothing twice), counted, listed
// for the dashboard, then handed to the notifier (email, webhook) without blocking anything.

import { createHash, randomUUID } from 'node:crypto';
import type { Config } from '../config/types.js';
import type { QuotaService } from '../accounting/quota.js';
import type { ReportedQuota } from '../accounting/reported-quota.js';
import { aggregate } from '../store/aggregate.js';
import type { Store } from '../store/client.js';
import { uuidv7 } from '../ledger/uuidv7.js';
import type { BudgetService, BudgetState } from '../accounting/budget.js';
import { ANOMALY_MIN_DAYS, ROLLING_WINDOW, evaluate, keyOf, type Candidate, type CostHistory, type FiredAlert } from './evaluator.js';
import { dayBounds, localDay } from '../core/tz.js';
import { ALERT_KINDS, type Alert, type AlertKind, type DeliveryResult } from './types.js';
import { BILLED_KINDS } from '../ledger/record.js';
import { isoDate } from '../ledger/periods.js';
import { DAY_MS } from '../core/windows.js';
import { settledWithin, type WriteFence } from '../store/write-fence.js';
import { MoneySum } from '../store/decimal.js';

/** How far back fired alerts are loaded (quota_reset follows warnings up to 35 days old). */
const MEMORY_MS = 35 * DAY_MS;

export interface Notify {
  notify(a: Alert): void;
  test(a: Alert): Promise<DeliveryResult[]>;
  close(): Promise<void>;
}

export interface AlertEvents {
  fired(kind: AlertKind): void;
  delivery(alert: Alert, r: DeliveryResult): void;
  error(err: unknown): void;
}

/** A stable UUID from an alert's key: the same alert fired twice is the same row. */
export function alertId(c: Pick<Candidate, 'kind' | 'subject' | 'threshold' | 'window'>): string {
  const h = createHash('sha256').update(keyOf(c)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export interface AlertRow {
  id: string;
  kind: string;
  severity: string;
  subject: string;
  threshold: number | null;
  window: string;
  title: string;
  message: string;
  data: string;
  fired_at: string;
  read: boolean;
}

export class AlertService {
  readonly #store: Store;
  readonly #config: () => Config;
  readonly #quota: QuotaService;
  readonly #budget: BudgetService;
  readonly #notify: Notify;
  readonly #events: AlertEvents;
  readonly #reported: () => readonly ReportedQuota[];
  readonly #fence: WriteFence | null;
  readonly #now: () => number;
  #fired: FiredAlert[] = [];
  #running: Promise<void> | null = null;
  #again = false;
  #timer: NodeJS.Timeout | null = null;
  #soon: NodeJS.Timeout | null = null;
  #closed = false;
  /** Set by start: before it, the alerts already fired are not known, so a poke must not evaluate. */
  #started = false;
  #lastStart = 0;
  #history: { key: string; days: CostHistory['previousDays'] } | null = null;
  /** This process, for alert claims (a replica or a restart is another instance). */
  readonly #instance = randomUUID();
  #evaluatedOnce: () => void = () => undefined;
  /**
   * Resolves when the first evaluation has ended (its figures in the budget's and the quota's state, or its error
   * reported): what the start's hold on routing waits for (routing/start-hold.ts), not the evaluations that follow.
   */
  readonly evaluated = new Promise<void>((resolve) => (this.#evaluatedOnce = resolve));

  constructor(
    deps: {
      store: Store; config: () => Config; quota: QuotaService; budget: BudgetService; notify: Notify; events: AlertEvents; reported?: () => readonly ReportedQuota[];
      /** The batch writer: an evaluation begins once no insert is running, so the quota's read can serve the budget. */
      fence?: WriteFence;
    },
    opts: { now?: () => number } = {},
  ) {
    this.#reported = deps.reported ?? (() => []);
    this.#fence = deps.fence ?? null;
    this.#store = deps.store;
    this.#config = deps.config;
    this.#quota = deps.quota;
    this.#budget = deps.budget;
    this.#notify = deps.notify;
    this.#events = deps.events;
    this.#now = opts.now ?? Date.now;
  }

  /** Load the alerts already fired, check once, then every `intervalMs`. */
  async start(intervalMs = 15_000): Promise<void> {
    this.#fired = await this.#storedFired();
    this.#started = true;
    this.#timer = setInterval(() => this.check(), intervalMs);
    this.#timer.unref();
    await this.check();
  }

  /** The alerts fired in the last MEMORY_MS, by every replica (and every earlier run), as ClickHouse holds them. */
  async #storedFired(): Promise<FiredAlert[]> {
    const rows = await this.#store.query<{ id: string; kind: AlertKind; subject: string; threshold: number | null; window: string; fired: string }>(
      `SELECT id, kind, subject, threshold, window, toUnixTimestamp64Milli(fired_at) AS fired FROM ${this.#store.t('alerts')} FINAL
       WHERE fired_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')`,
      { since: this.#now() - MEMORY_MS },
    );
    return rows.map((r) => ({ id: r.id, kind: r.kind, subject: r.subject, threshold: r.threshold === null ? null : Number(r.threshold), window: r.window, firedAt: Number(r.fired) }));
  }

  /**
   * A record was published: check soon (200 ms after it, coalesced, and at most one evaluation started per second,
   * so a busy gateway sees a crossing within about a second without querying on every request).
   */
  poke(): void {
    // Before start (the store is still opening) there is nothing to do: start evaluates once it has read the history.
    if (this.#soon !== null || this.#closed || !this.#started) return;
    const wait = Math.max(200, 1000 - (Date.now() - this.#lastStart));
    this.#soon = setTimeout(() => {
      this.#soon = null;
      void this.check();
    }, wait);
    this.#soon.unref();
  }

  /** Evaluate now (one evaluation at a time; a call during one runs another right after). Never throws. */
  check(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        this.#lastStart = Date.now();
        try {
          await this.#evaluate();
        } catch (err) {
          this.#events.error(err);
        }
        this.#evaluatedOnce();
      } while (this.#again && !this.#closed);
    })().finally(() => (this.#running = null));
    return this.#running;
  }

  async #evaluate(): Promise<void> {
    const cfg = this.#config();
    const enabled = new Set<AlertKind>(ALERT_KINDS.filter((k) => cfg.alerts.kinds[k] !== false));
    enabled.add('auto_switch');
    // A read that begins while an insert runs cannot serve the budget (SharedSpend): wait for the insert first (one
    // attempt of it; the embedded engine runs one statement at a time, so the read would have waited for it anyway), a
    // second at most: the oldest leftover segment not yet settled while the store fails counts as one (writer.ts).
    if (this.#fence !== null) await settledWithin(this.#fence);
    // Figures that include every row stored so far: the evaluator looks because some were (src/alerts/index.ts).
    const quota = await this.#quota.entries({ current: true }).catch(async (err: unknown) => {
      await this.#budget.refresh(); // the budget's state (the auto-switch gate) kept current all the same
      throw err;
    });
    // The budget's stored spend was summed by the quota's read when it could be (its windows start on UTC midnights):
    // the budget takes it when still exact (no insert since), and reads for itself otherwise. One read, not two.
    const budget = await this.#budget.refresh(this.#quota.spend);
    const now = this.#now();
    const costs = enabled.has('cost_anomaly') ? await this.#costs(budget, now) : null;
    const input = { now, enabled, quota, quotaComplete: this.#quota.complete(quota), budget, costs, fired: this.#fired, thresholds: cfg.alerts.thresholds, reported: this.#reported() };
    let candidates = evaluate(input);
    // Two kinds are named from this replica's memory of what fired, which another replica may have added to: a rolling
    // quota's alert fires once per window length (another replica may have fired it in an earlier bucket of the
    // clock), and a quota's reset is named by the last warning (one this replica did not see, if the quota crossed a
    // threshold just before it reset). Before one fires, what every replica fired is read (docs/scaling.md; such an
    // alert is rare: no read otherwise) and the rule applied again.
    if (candidates.some((c) => c.window.startsWith(ROLLING_WINDOW) || c.kind === 'quota_reset')) {
      const known = new Set(this.#fired.map((f) => f.id));
      for (const f of await this.#storedFired()) if (!known.has(f.id)) this.#fired.push(f);
      candidates = evaluate({ ...input, fired: this.#fired });
    }
    for (const c of candidates) await this.#fire(c, now);
  }

  /**
   * The previous 7 local days' billed cost (days with usage; read once per local day, it cannot change), today's
   * (the budget's own figure: the same rows and day), and today's by provider, read only when today already looks
   * anomalous (it is the alert's reason). A busy gateway evaluates every second; this keeps that to no extra read.
   */
  async #costs(budget: BudgetState, now: number): Promise<CostHistory> {
    const tz = budget.timezone;
    const today = dayBounds(now, tz);
    const billed = { kinds: BILLED_KINDS };
    const key = `${tz}\u0000${today.date}`;
    if (this.#history?.key !== key) {
      // From the start of the 7th local day back, not 7 x 24 h back: a span with a 23-hour day (spring forward) reached
      // an hour into an 8th day, which counted as a day with usage and lowered the average (a false anomaly).
      const weekAgo = isoDate(Date.parse(`${today.date}T00:00:00Z`) - 7 * DAY_MS);
      const days = await aggregate(this.#store, { from: localDay(tz, weekAgo).from, to: today.from, by: ['day'], tz, filters: billed, sums: ['cost'] });
      this.#history = { key, days: days.filter((d) => d.day !== today.date).map((d) => ({ date: d.day!, cost: d.cost })) };
    }
    const previousDays = this.#history.days;
    const withUsage = previousDays.filter((d) => d.cost > 0);
    const average = withUsage.length > 0 ? withUsage.reduce((a, d) => a + d.cost, 0) / withUsage.length : 0;
    const suspicious = withUsage.length >= ANOMALY_MIN_DAYS && budget.daily.spent > this.#config().alerts.thresholds.anomaly_multiple * average;
    const byProvider = suspicious ? await aggregate(this.#store, { from: today.from, to: now + 1, by: ['provider'], filters: billed, sums: ['cost'] }) : [];
    return {
      previousDays,
      today: suspicious ? MoneySum.of(byProvider.map((g) => g.cost)) : budget.daily.spent,
      todayByProvider: byProvider.map((g) => ({ provider: g.provider!, cost: g.cost })),
    };
  }

  async #fire(c: Candidate, now: number): Promise<void> {
    const alert: Alert = { ...c, id: alertId(c), firedAt: now };
    const dashboard = this.#config().alerts.channels.dashboard;
    // Written before anything is sent: the row is what keeps a restart from firing it again, and the claim that keeps
    // another replica from sending it too (docs/scaling.md): the same alert from a second replica is the same
    // deduplication token, so ClickHouse drops its insert, and the row read back names the replica that owns it.
    await this.#store.insert('alerts', [{ ...toRow(alert, !dashboard), claimed_by: this.#instance }], `alert-${alert.id}`);
    const [owner] = await this.#store.query<{ claimed_by: string }>(
      `SELECT claimed_by FROM ${this.#store.t('alerts')} WHERE id = {id:UUID} ORDER BY fired_at, version LIMIT 1`,
      { id: alert.id },
    );
    // Fired once the owner is known: a read that fails leaves the alert to the next evaluation, whose insert of the
    // same token is dropped and whose read names this replica again (it would never be sent otherwise).
    this.#fired.push({ id: alert.id, kind: alert.kind, subject: alert.subject, threshold: alert.threshold, window: alert.window, firedAt: now });
    this.#fired = this.#fired.filter((f) => f.firedAt >= now - MEMORY_MS);
    if (owner !== undefined && owner.claimed_by !== this.#instance) return; // another replica fired it first
    this.#events.fired(alert.kind);
    if (dashboard) this.#events.delivery(alert, { channel: 'dashboard', delivered: true, attempts: 1, error: '' });
    this.#notify.notify(alert);
  }

  /** POST /api/alerts/test: a test alert to the dashboard list and every enabled channel, with each outcome. */
  async test(): Promise<DeliveryResult[]> {
    const now = this.#now();
    const alert: Alert = {
      id: uuidv7(now), kind: 'test', severity: 'info', subject: 'test', threshold: null, window: new Date(now).toISOString(),
      title: 'Test notification from Tollgate', message: 'This is a test notification: if you can read it, this channel works.', data: { test: 1 }, firedAt: now,
    };
    const results: DeliveryResult[] = [];
    if (this.#config().alerts.channels.dashboard) {
      try {
        await this.#store.insert('alerts', [toRow(alert, false)]);
        results.push({ channel: 'dashboard', delivered: true, attempts: 1, error: '' });
      } catch (err) {
        results.push({ channel: 'dashboard', delivered: false, attempts: 1, error: (err as Error).message.slice(0, 200) });
      }
    }
    results.push(...(await this.#notify.test(alert)));
    for (const r of results) this.#events.delivery(alert, r);
    return results;
  }

  async list(opts: { unread?: boolean; limit: number }): Promise<{ alerts: ReturnType<typeof fromRow>[]; unread: number }> {
    const t = this.#store.t('alerts');
    const rows = await this.#store.query<AlertRow>(
      `SELECT toString(id) AS id, kind, severity, subject, threshold, window, title, message, data, toString(fired_at) AS fired_at, read
       FROM ${t} FINAL ${opts.unread ? 'WHERE NOT read' : ''} ORDER BY fired_at DESC, id DESC LIMIT {limit:UInt32}`,
      { limit: opts.limit },
    );
    const [count] = await this.#store.query<{ n: string }>(`SELECT count() AS n FROM ${t} FINAL WHERE NOT read`);
    return { alerts: rows.map(fromRow), unread: Number(count?.n ?? 0) };
  }

  /** Mark alerts read (all of them when `ids` is null); returns how many changed. */
  async markRead(ids: readonly string[] | null): Promise<number> {
    const t = this.#store.t('alerts');
    const rows = await this.#store.query<Record<string, unknown>>(
      `SELECT id, kind, severity, subject, threshold, window, title, message, data, fired_at, version, claimed_by FROM ${t} FINAL
       WHERE NOT read ${ids === null ? '' : 'AND id IN {ids:Array(UUID)}'}`,
      { ids: ids ?? [] },
    );
    if (rows.length === 0) return 0;
    const version = this.#now() * 1000;
    await this.#store.insert('alerts', rows.map((r) => ({ ...r, fired_at: r.fired_at, read: true, version: Math.max(version, Number(r.version) + 1) })));
    return rows.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#soon) clearTimeout(this.#soon);
    await this.#running;
    await this.#notify.close();
  }
}

function toRow(a: Alert, read: boolean): Record<string, unknown> {
  return {
    id: a.id, kind: a.kind, severity: a.severity, subject: a.subject, threshold: a.threshold, window: a.window, title: a.title,
    message: a.message, data: JSON.stringify(a.data), fired_at: a.firedAt, read, version: a.firedAt * 1000,
  };
}

function fromRow(r: AlertRow) {
  return {
    id: r.id, kind: r.kind, severity: r.severity, subject: r.subject, threshold: r.threshold === null ? null : Number(r.threshold), window: r.window,
    title: r.title, message: r.message, data: JSON.parse(r.data) as Record<string, unknown>,
    fired_at: `${r.fired_at.replace(' ', 'T')}Z`, read: Boolean(r.read),
  };
}
