// Counts reported at most once a period per key: the first at once, then what came since, in one line at the end of
// the period. A spool full under load dropped a row a request and logged each drop at error level (4,806 lines in
// 1.7 s, a review of outages): the metric counts every row; the log says how many, once every 10 s.

export type CountReport = (n: number, key: string) => void;

export function everyPeriod(report: CountReport, periodMs = 10_000, now: () => number = Date.now): CountReport {
  const keys = new Map<string, { at: number; pending: number; timer: NodeJS.Timeout | null }>();
  return (n, key) => {
    const k = keys.get(key) ?? { at: -Infinity, pending: 0, timer: null };
    keys.set(key, k);
    const t = now();
    if (t - k.at >= periodMs && k.timer === null) {
      k.at = t;
      report(n, key);
      return;
    }
    k.pending += n;
    k.timer ??= setTimeout(() => {
      k.timer = null;
      k.at = now();
      const pending = k.pending;
      k.pending = 0;
      report(pending, key);
    }, Math.max(0, k.at + periodMs - t)).unref();
  };
}
