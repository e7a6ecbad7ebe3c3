// Latency figures shared by the benchmarks.

/** Nearest-rank percentile `p` (0-1) of an ascending array; NaN when it is empty. */
export function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/** The median of unsorted samples (nearest rank: the lower middle one of an even count); NaN when there are none. */
export function median(samples) {
  return percentile([...samples].sort((a, b) => a - b), 0.5);
}

/** p50 and p99 of unsorted samples (milliseconds, or whatever they are in). */
export function p50p99(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 0.5), p99: percentile(s, 0.99) };
}
