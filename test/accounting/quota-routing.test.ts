// The routing verdict on its own (src/accounting/quota-routing.ts): a snapshot's entry, plus the calls published since
// it counted them, plus, for a quota counted in requests, the attempts in flight; tokens and time only once published.

import t from 'tap';
import { evaluateQuota, planQuota, type QuotaConfig } from '../../src/config/quota-kinds.js';
import { UnstoredCalls } from '../../src/accounting/unstored.js';
import { QuotaVerdicts } from '../../src/accounting/quota-routing.js';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const entry = (id: string, q: QuotaConfig, used: number, secondaryUsed?: number) => ({
  id, ...evaluateQuota(planQuota(q, NOW), { used, oldest: null, ...(secondaryUsed === undefined ? {} : { secondaryUsed }) }, NOW),
});
let n = 0;
const call = (list: UnstoredCalls, provider: string, tokens: number) =>
  list.addRow({ request_id: `r${++n}`, kind: 'request', provider, model: 'm', ts: NOW, total_tokens: tokens, cost: '0', duration_ms: 1000 } as never);

t.test('requests: published since the snapshot and in flight count; a release counts once', async (t) => {
  const list = new UnstoredCalls();
  call(list, 'p', 1); // counted by the snapshot below
  const v = new QuotaVerdicts(list);
  v.adopt([entry('p', { kind: 'daily_requests', limit: 3 }, 1, 1)], list.tallies());
  t.equal(v.exhausted('p'), false);
  call(list, 'p', 1);
  t.equal(v.exhausted('p'), false, '2 of 3');
  const release = v.reserve('p');
  t.equal(v.exhausted('p'), true, '2 published and 1 in flight: 3 of 3');
  t.equal(v.resetsAt('p'), Date.parse('2026-12-01T00:00:00Z'), 'returns at the daily reset');
  release();
  release();
  t.equal(v.inFlight('p'), 0, 'released once');
  t.equal(v.exhausted('p'), false);
  v.adopt([entry('p', { kind: 'daily_requests', limit: 3 }, 2, 2)], list.tallies());
  t.equal(v.exhausted('p'), false, 'a new snapshot counting the 2 calls: not counted twice');
  t.equal(v.exhausted('other'), false, 'a provider no snapshot knows');
});

t.test('requests: a call refused before it went out (dispatched false) counts neither in the day nor in the month', async (t) => {
  const list = new UnstoredCalls();
  const v = new QuotaVerdicts(list);
  v.adopt([entry('p', { kind: 'daily_requests', limit: 3, monthly_limit: 10 }, 2, 9)], list.tallies());
  const refused = (dispatched: unknown) =>
    list.addRow({ request_id: `r${++n}`, kind: 'attempt', provider: 'p', model: 'm', ts: NOW, total_tokens: 0, cost: '0', duration_ms: 1, dispatched } as never);
  for (let i = 0; i < 5; i++) refused(false);
  refused(0); // as a spooled row may hold it
  t.equal(v.exhausted('p'), false, '2 of 3 and 9 of 10 still: six refused calls added nothing');
  refused(undefined); // a row of an earlier version: it went out
  t.equal(v.exhausted('p'), true, 'a row without the column counts, as it did');
  const list2 = new UnstoredCalls();
  const w = new QuotaVerdicts(list2);
  w.adopt([entry('p', { kind: 'daily_requests', limit: 3, monthly_limit: 10 }, 2, 9)], list2.tallies());
  list2.addRow({ request_id: `r${++n}`, kind: 'request', provider: 'p', model: 'm', ts: NOW, total_tokens: 0, cost: '0', duration_ms: 1, dispatched: true } as never);
  t.equal(w.exhausted('p'), true, 'a dispatched call counts');
});

t.test("daily_requests: the month's limit too", async (t) => {
  const list = new UnstoredCalls();
  const v = new QuotaVerdicts(list);
  v.adopt([entry('p', { kind: 'daily_requests', limit: 100, monthly_limit: 10 }, 0, 9)], list.tallies());
  t.equal(v.exhausted('p'), false);
  v.reserve('p');
  t.equal(v.exhausted('p'), true, '9 this month and 1 in flight');
  t.equal(v.resetsAt('p'), Date.parse('2026-12-01T00:00:00Z'));
});

t.test('tokens: what was published counts, calls in flight do not (their tokens are not known)', async (t) => {
  const list = new UnstoredCalls();
  const v = new QuotaVerdicts(list);
  v.adopt([entry('p', { kind: 'daily_tokens', limit: 1000 }, 900)], list.tallies());
  v.reserve('p');
  v.reserve('p');
  t.equal(v.exhausted('p'), false, 'in flight: not counted');
  call(list, 'p', 99);
  t.equal(v.exhausted('p'), false, '999 of 1000');
  call(list, 'p', 1);
  t.equal(v.exhausted('p'), true, '1000 of 1000');
});

t.test('hours: the published calls\' time', async (t) => {
  const list = new UnstoredCalls();
  const v = new QuotaVerdicts(list);
  v.adopt([entry('p', { kind: 'rolling_hours', limit: 1 }, 0.9995)], list.tallies());
  t.equal(v.exhausted('p'), false);
  call(list, 'p', 0); // one second: 0.00028 h
  t.equal(v.exhausted('p'), false);
  call(list, 'p', 0);
  t.equal(v.exhausted('p'), true, 'two seconds more: past the hour');
});

// From a review: with the store refusing reads, a used-up provider stayed "exhausted" past its quota's reset for the
// whole outage (no new snapshot came): a combo passed it over, or answered 503 with Retry-After 1 every second. Once
// the reset has passed, the ended window's figures are not held against it.
t.test('a used-up quota whose reset has passed since the snapshot is not held against the provider', async (t) => {
  const list = new UnstoredCalls();
  let clock = NOW;
  const v = new QuotaVerdicts(list, () => clock);
  v.adopt([entry('p', { kind: 'daily_requests', limit: 3 }, 3, 3)], list.tallies());
  t.equal(v.exhausted('p'), true, 'used up');
  t.equal(v.resetsAt('p'), Date.parse('2026-12-01T00:00:00Z'));
  clock = Date.parse('2026-11-30T23:59:59.999Z');
  t.equal(v.exhausted('p'), true, 'a millisecond before the reset');
  clock = Date.parse('2026-12-01T00:00:00Z');
  t.equal(v.exhausted('p'), false, 'at the reset, with no read since');
  t.equal(v.resetsAt('p'), null);
});

// From the review of that rule: past the day's reset the month's limit was not counted any more (a day used up, the
// month at 4 of 5: ten calls went through), and a rolling window was let through when its oldest row left, still far
// over its limit. Now the new day counts from 0 with the calls since the snapshot, the month beside it as it stood, and
// a rolling window is held until a read.
t.test('past the day\'s reset: the calls since count against the new day and the month as it stood', async (t) => {
  const at = Date.parse('2026-11-15T12:00:00Z');
  const list = new UnstoredCalls();
  let clock = at;
  const v = new QuotaVerdicts(list, () => clock);
  const q: QuotaConfig = { kind: 'daily_requests', limit: 3, monthly_limit: 5 };
  v.adopt([{ id: 'p', ...evaluateQuota(planQuota(q, at), { used: 3, oldest: null, secondaryUsed: 4 }, at) }], list.tallies());
  t.equal(v.exhausted('p'), true, 'the day 3 of 3, the month 4 of 5');
  clock = Date.parse('2026-11-16T00:00:01Z');
  t.equal(v.exhausted('p'), false, 'the day has reset; the month has one request left');
  const release = v.reserve('p');
  t.equal(v.exhausted('p'), true, 'one in flight: the month is used up');
  release();
  call(list, 'p', 1);
  t.equal(v.exhausted('p'), true, 'one published: the month is used up');
  t.equal(v.resetsAt('p'), Date.parse('2026-12-01T00:00:00Z'), 'until the month resets');
});

t.test('a rolling window is held past its oldest row\'s leaving, until a read', async (t) => {
  const list = new UnstoredCalls();
  let clock = NOW;
  const v = new QuotaVerdicts(list, () => clock);
  const oldest = NOW - 5 * 3_600_000 + 60_000;
  v.adopt([{ id: 'p', ...evaluateQuota(planQuota({ kind: 'rolling_tokens', limit: 100, window: '5h' }, NOW), { used: 1000, oldest }, NOW) }], list.tallies());
  t.equal(v.exhausted('p'), true, '1000 of 100 tokens');
  clock = NOW + 120_000;
  t.equal(v.exhausted('p'), true, 'its oldest row has left, the rest is still far over');
});
