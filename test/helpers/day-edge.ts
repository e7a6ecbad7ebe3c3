// Tests that drive a gateway on the real clock and assert figures of one day (a daily budget, a daily quota, "today")
// must not run across that day's edge: at the edge the day's spend starts again from 0, alerts of the new day fire,
// and what the test asserted of "today" is then of yesterday (the alerts suite failed that way in a CI run that
// crossed 00:00 UTC). `clearOfDayEdges` waits, when the file would come within `needMs` of an edge, until just after
// it. A wait happens only to a run that starts within `needMs` of an edge.

import type { Test } from 'tap';
import { DAY_MS, HOUR_MS } from '../../src/core/windows.js';

/** Milliseconds from `now` to the next start of one of the UTC `hours` (0 is midnight). */
export function msToNextEdge(now: number, hours: readonly number[]): number {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  let next = Infinity;
  for (const h of hours) {
    for (const day of [today, today + DAY_MS]) {
      const edge = day + h * HOUR_MS;
      if (edge > now && edge - now < next) next = edge - now;
    }
  }
  return next;
}

/**
 * Wait until no edge of the UTC `hours` (midnight by default; 2 for a quota that resets at 02:00 UTC) comes within
 * `needMs`, the time the file needs with room to spare.
 */
export async function clearOfDayEdges(t: Test, needMs: number, hours: readonly number[] = [0]): Promise<void> {
  const left = msToNextEdge(Date.now(), hours);
  if (left >= needMs) return;
  const wait = left + 1000;
  t.comment(`waiting ${Math.ceil(wait / 1000)} s for a day's edge (UTC hours ${hours.join(', ')}) to pass: this file asserts figures of one day`);
  await new Promise((r) => setTimeout(r, wait));
}
