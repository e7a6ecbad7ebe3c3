// The batch writer's fence (writer.ts): what a reader that adds the calls not stored yet to what it read (the quota,
// the budget) needs to know of the inserts, and how it holds them off while it reads.

/**
 * Whether an insert ran while something was read: a reader that adds rows not yet written to what it read (the
 * budget: stored spend plus records not yet confirmed written) must know that no insert landed during its read, or it
 * counts those rows twice. An insert counts as ended once its `written` event went out.
 */
export interface WriteFence {
  /** Inserts begun so far. */
  readonly insertsStarted: number;
  /** Inserts ended so far (landed, their rows reported written, or failed). */
  readonly insertsEnded: number;
  /** Resolves once no insert is running. */
  settled(): Promise<void>;
  /**
   * Hold new inserts off for a read: resolves once no insert runs (`ms` waited at most), with the release; no insert
   * begins until it is called, or 2 x `ms` from now (a read held up by a store in trouble must not hold the record up).
   * A backlog going in insert after insert left a reader no moment between two of them.
   */
  hold(ms?: number): Promise<() => void>;
}

/**
 * How long a reader waits for an insert to end before it reads anyway: an insert takes tens of milliseconds; one held
 * up by a store in trouble (up to the client's request timeout) must not hold the reads up too.
 */
export const INSERT_WAIT_MS = 1000;

/** `fence.settled()`, waited for `ms` at most. */
export async function settledWithin(fence: WriteFence, ms = INSERT_WAIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([fence.settled(), waited]).finally(() => clearTimeout(timer));
}
