// The quota engine at work: for every provider, its quota kind's window (quota/kinds.ts) summed from the
// ClickHouse record (store/aggregate.ts: rollup + raw edges), merged with the provider's usage source where one is
// configured, with today's and this month's cost, the connection's cooldowns, and a flag when the provider sits at
// 0% while its requests fail (a connection problem: a refused key, the provider down, OAuth to reconnect).
// Snapshots are cached briefly (replicas read the same ClickHouse, so they agree); `exhausted()` answers the
// routing step from the latest one.

import type { Config, ProviderConfig } from '../config/types.js';
import { aggregate, total } from '../store/aggregate.js';
import type { Store } from '../store/client.js';
import type { RecordKind } from '../usage/record.js';
import { evaluateQuota, msToHours, planQuota, quotaConfigOf, type QuotaConfig, type QuotaEvaluation, type QuotaPlan } from './kinds.js';
import { UsageSources } from './source.js';
import { DAY_MS, monthStart } from './windows.js';

/** The rows that use a provider's quota: every upstream call (pings included), not the combo summaries. */
export const QUOTA_KINDS_COUNTED: readonly RecordKind[] = ['request', 'attempt', 'keepalive'];
/** Look-back for the connection-problem flag. */
const RECENT_MS = 15 * 60_000;
const round12 = (v: number): number => Number(v.toFixed(12));

export interface ConnectionProblem {
  readonly reason: 'invalid_key' | 'oauth_reconnect' | 'provider_down' | 'unknown';
  readonly failures: number;
  readonly last_error: string;
}

export interface QuotaEntry extends QuotaEvaluation {
  readonly id: string;
  readonly name: string;
  readonly group: ProviderConfig['group'];
  readonly kind: QuotaConfig['kind'];
  readonly cost: { readonly today: number; readonly month: number; readonly currency: 'USD' };
  /** rolling_hours: the hours of each model in the window. */
  readonly models?: readonly { readonly model: string; readonly used: number }[];
  /** Where `quota.used`/`limit` come from: the gateway's record, or the provider's usage source. */
  readonly source: { readonly kind: 'computed' | 'provider'; readonly computed_used: number; readonly status?: string; readonly fetched_at?: string };
  readonly connection_problem: ConnectionProblem | null;
}

export class QuotaService {
  readonly #store: Store;
  readonly #config: () => Config;
  readonly #now: () => number;
  readonly #sources: UsageSources;
  readonly #cacheMs: number;
  #cached: { at: number; entries: Promise<QuotaEntry[]> } | null = null;
  #last = new Map<string, QuotaEntry>();

  constructor(store: Store, config: () => Config, opts: { now?: () => number; cacheMs?: number } = {}) {
    this.#store = store;
    this.#config = config;
    this.#now = opts.now ?? Date.now;
    this.#sources = new UsageSources(this.#now);
    this.#cacheMs = opts.cacheMs ?? 1000;
  }

  /** Whether the provider's quota was used up in the latest snapshot. */
  exhausted(providerId: string): boolean {
    return this.#last.get(providerId)?.exhausted === true;
  }

  /** One entry per configured provider, at most `cacheMs` old. */
  entries(): Promise<QuotaEntry[]> {
    const now = this.#now();
    if (this.#cached && now - this.#cached.at < this.#cacheMs) return this.#cached.entries;
    const entries = this.#compute(now).then((list) => {
      this.#last = new Map(list.map((e) => [e.id, e]));
      return list;
    });
    entries.catch(() => (this.#cached = null));
    this.#cached = { at: now, entries };
    return entries;
  }

  async #compute(now: number): Promise<QuotaEntry[]> {
    const cfg = this.#config();
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    // Cost of every provider at once: this month, by day, so today comes from the same query.
    const costs = await aggregate(this.#store, { from: monthStart(now), to: now + 1, by: ['provider', 'day'], filters: { kinds: QUOTA_KINDS_COUNTED } });
    const todayIso = new Date(today).toISOString().slice(0, 10);
    const cost = (pid: string) => {
      const rows = costs.filter((c) => c.provider === pid);
      return {
        today: round12(rows.filter((r) => r.day === todayIso).reduce((s, r) => s + r.cost, 0)),
        month: round12(rows.reduce((s, r) => s + r.cost, 0)),
        currency: 'USD' as const,
      };
    };
    return Promise.all(Object.entries(cfg.providers).map(([id, p]) => this.#entry(id, p, now, cost(id))));
  }

  async #entry(id: string, p: ProviderConfig, now: number, cost: QuotaEntry['cost']): Promise<QuotaEntry> {
    const q = quotaConfigOf(p) ?? { kind: 'unlimited' as const };
    const plan = planQuota(q, now);
    const filters = { provider: id, kinds: QUOTA_KINDS_COUNTED };
    const sums = await total(this.#store, { from: plan.from, to: Math.min(plan.to, now + 1), filters });
    const used = usedOf(plan, sums);
    const secondaryUsed = plan.secondary ? (await total(this.#store, { from: plan.secondary.from, to: Math.min(plan.secondary.to, now + 1), filters })).rows : undefined;
    let evaluation = evaluateQuota(plan, { used, oldest: sums.oldest, ...(secondaryUsed === undefined ? {} : { secondaryUsed }) }, now);
    let source: QuotaEntry['source'] = { kind: 'computed', computed_used: evaluation.quota.used };
    if (q.source) {
      const state = await this.#sources.refresh(id, q.source);
      const reading = state?.reading;
      if (reading) {
        // The provider's own figures win; the reset it gives, when it gives one, too.
        const merged = evaluateQuota({ ...plan, limit: reading.limit, nextReset: reading.reset ?? plan.nextReset, rollingMs: reading.reset === null ? plan.rollingMs : null }, { used: reading.used, oldest: sums.oldest, ...(secondaryUsed === undefined ? {} : { secondaryUsed }) }, now);
        evaluation = merged;
        source = { kind: 'provider', computed_used: source.computed_used, status: state.status, fetched_at: new Date(reading.fetchedAt).toISOString() };
      } else if (state) {
        source = { ...source, status: state.status };
      }
    }
    const models = plan.unit === 'hours'
      ? (await aggregate(this.#store, { from: plan.from, to: Math.min(plan.to, now + 1), by: ['model'], filters })).map((g) => ({ model: g.model!, used: round4(msToHours(g.durationMs)) }))
      : undefined;
    // "At 0%": no tokens in the window at all (a failing request may still count as a request or take time).
    const problem = sums.tokens === 0 ? await this.#connectionProblem(id, p, now) : null;
    return {
      id, name: p.name ?? id, group: p.group, kind: q.kind, ...evaluation, cost, ...(models ? { models } : {}), source, connection_problem: problem,
    };
  }

  /** At 0% with failing requests (and no success) in the last 15 minutes: say why, from the latest failure. */
  async #connectionProblem(id: string, p: ProviderConfig, now: number): Promise<ConnectionProblem | null> {
    const byStatus = await aggregate(this.#store, { from: now - RECENT_MS, to: now + 1, by: ['status'], filters: { provider: id, kinds: QUOTA_KINDS_COUNTED } });
    const failures = byStatus.find((g) => g.status === 'failure')?.rows ?? 0;
    const successes = byStatus.find((g) => g.status === 'success')?.rows ?? 0;
    if (failures === 0 || successes > 0) return null;
    const [last] = await this.#store.query<{ error_type: string; http_status: number }>(
      `SELECT error_type, http_status FROM ${this.#store.t('requests')}
       WHERE provider = {id:String} AND status = 'failure' AND kind IN ('request', 'attempt', 'keepalive')
         AND ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
       ORDER BY ts DESC LIMIT 1`,
      { id, from: now - RECENT_MS },
    );
    const e = last?.error_type ?? '';
    const status = Number(last?.http_status ?? 0);
    let reason: ConnectionProblem['reason'] = 'unknown';
    if (e === 'TOLLGATE_ERR_PROVIDER_AUTH' || (p.auth.type === 'oauth' && (status === 401 || status === 403))) reason = 'oauth_reconnect';
    else if (status === 401 || status === 403) reason = 'invalid_key';
    else if (status >= 500 || e.startsWith('TOLLGATE_ERR_UPSTREAM_')) reason = 'provider_down';
    return { reason, failures, last_error: e || String(status) };
  }
}

const round4 = (v: number): number => Number(v.toFixed(4));

function usedOf(plan: QuotaPlan, s: { rows: number; tokens: number; durationMs: number }): number {
  switch (plan.unit) {
    case 'hours':
      return round4(msToHours(s.durationMs));
    case 'requests':
      return s.rows;
    default:
      return s.tokens;
  }
}
