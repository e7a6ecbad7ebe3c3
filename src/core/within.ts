// A promise given a deadline: the value when it comes in time, null once `ms` have passed (the promise itself goes on;
// a rejection in time is passed on). Used where a wait on something outside (a token endpoint, an OTLP collector)
// must not hold the gateway past a bound.

export function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  if (ms <= 0) return Promise.resolve(null);
  if (!Number.isFinite(ms)) return p; // setTimeout would take Infinity for 1 ms
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)))]).finally(() => clearTimeout(timer));
}

/** A promise that resolves after `ms` (a loop's rest between tries that would otherwise spin). */
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
