// Counts reported at most once a period per key: the first at once, then what came since, in one line at the end of
// the period. A spool full under load dropped a row a request and logged each drop at error level (4,806 lines in
// 1.7 s, a review of outages): the metric counts every row; the log says how many, once every 10 s.

export type CountReport = (n: number, key: string) => void;

/** `report` held to once a period a key; `flush` reports what is held now (a stop: nothing is left unsaid). */
export function everyPeriod(report: CountReport, periodMs = 10_000, now: () => number = Date.now): CountReport & { flush(): void } {
  const keys = new Map<string, { at: number; pending: number; timer: NodeJS.Timeout | null }>();
  /** What `key` holds, reported now (its period starting again), its timer cleared. */
  const release = (key: string, k: { at: number; pending: number; timer: NodeJS.Timeout | null }): void => {
    if (k.timer !== null) clearTimeout(k.timer);
    k.timer = null;
    if (k.pending === 0) return;
    k.at = now();
    const pending = k.pending;
    k.pending = 0;
    report(pending, key);
  };
  const flush = (): void => keys.forEach((k, key) => release(key, k));
  return Object.assign((n: number, key: string): void => {
    const k = keys.get(key) ?? { at: -Infinity, pending: 0, timer: null };
    keys.set(key, k);
    const t = now();
    if (t - k.at >= periodMs && k.timer === null) {
      k.at = t;
      report(n, key);
      return;
    }
    k.pending += n;
    k.timer ??= setTimeout(() => release(key, k), Math.max(0, k.at + periodMs - t)).unref();
  }, { flush });
}
