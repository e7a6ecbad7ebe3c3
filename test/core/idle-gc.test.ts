// The collection when quiet (src/core/idle-gc.ts): when it happens on a clock the test moves, and that the function it
// finds really is V8's full collection, without a global `gc` left in the gateway's context.

import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import t from 'tap';
import { IdleGc, MAX_WAIT_MS, RATE_WINDOW_MS, v8Gc, type GcKind } from '../../src/core/idle-gc.js';

function rig(idleS = 10) {
  const s = { now: 1_000_000, begun: 0, inFlight: 0, idleS, young: 0, full: 0, order: [] as GcKind[], reported: [] as number[] };
  const gc = new IdleGc({
    idleS: () => s.idleS,
    begun: () => s.begun,
    inFlight: () => s.inFlight,
    collect: (kind) => {
      s.order.push(kind);
      if (kind === 'young') s.young++;
      else s.full++;
    },
    collected: (ms) => s.reported.push(ms),
    now: () => s.now,
  });
  /** `ms` later, one look. */
  const look = (ms: number) => {
    s.now += ms;
    gc.check();
  };
  return { s, gc, look };
}

t.test('nothing is collected before a proxied request, however long the process idles', async (t) => {
  const { s, look } = rig();
  for (let i = 0; i < 100; i++) look(1000);
  t.same([s.young, s.full, s.reported.length], [0, 0, 0]);
});

t.test('a young collection as the quiet starts, the full one once it has lasted idle_gc_s; once a quiet', async (t) => {
  const { s, look } = rig(10);
  s.begun = 3;
  look(1000); // the requests are seen at this look: the quiet is counted from here
  t.same([s.young, s.full], [0, 0]);
  look(1000);
  t.same([s.young, s.full], [1, 0], 'the young one at the first quiet look');
  look(8_999);
  t.equal(s.full, 0, 'not before the quiet has lasted 10 s');
  look(1);
  t.same([s.young, s.full, s.reported.length], [1, 1, 1], 'the full one at 10 s of quiet');
  t.equal(s.reported.length, 1, 'its duration is reported');
  t.ok(s.reported[0]! >= 0);
  for (let i = 0; i < 60; i++) look(1000);
  t.same([s.young, s.full], [1, 1], 'a quiet spell owes one of each, not one a tick');
  s.begun = 4;
  look(1000);
  look(1000);
  look(10_000);
  t.same(s.order, ['young', 'full', 'young', 'full'], 'the next busy spell owes the next');
});

t.test(`the full one comes ${RATE_WINDOW_MS} ms after the young one at least, whatever idle_gc_s`, async (t) => {
  const { s, look } = rig(1);
  s.begun = 1;
  look(1000);
  look(1000);
  t.equal(s.young, 1);
  look(RATE_WINDOW_MS - 1);
  t.equal(s.full, 0, 'idle_gc_s has passed, the rate window has not');
  look(1);
  t.equal(s.full, 1);
});

t.test('requests that keep coming hold both off', async (t) => {
  const { s, look } = rig(10);
  for (let i = 0; i < 60; i++) {
    s.begun++;
    look(1000);
  }
  t.same([s.young, s.full], [0, 0], 'a minute of steady traffic: none');
  look(1000);
  look(10_000);
  t.same([s.young, s.full], [1, 1], 'then quiet: one of each');
  s.begun++;
  look(1000);
  look(1000);
  t.equal(s.young, 2, 'a request after the young collection starts the quiet again');
  s.begun++;
  look(1000);
  look(1000);
  look(8000);
  t.same([s.young, s.full], [3, 1], 'and the full one waits for the new quiet');
  look(1000);
  t.same([s.young, s.full], [3, 2]);
});

t.test('a request still in flight (a long stream) holds the full one off until it ends, or for MAX_WAIT_MS at most', async (t) => {
  const { s, look } = rig(10);
  s.begun = 1;
  s.inFlight = 1;
  look(1000);
  look(1000);
  t.same([s.young, s.full], [1, 0], 'the young one as the quiet starts, stream or not');
  look(10_000);
  t.equal(s.full, 0, 'due, but a stream is running: it would see the pause between two chunks');
  look(20_000);
  t.equal(s.full, 0, 'still running: still waiting');
  s.inFlight = 0;
  look(1000);
  t.same([s.young, s.full], [1, 1], 'at the first look after it ended');

  const stuck = rig(10);
  stuck.s.begun = 1;
  stuck.s.inFlight = 1;
  stuck.look(1000);
  stuck.look(1000);
  stuck.look(9_000); // due now: the quiet has lasted 10 s
  stuck.look(MAX_WAIT_MS - 1);
  t.equal(stuck.s.full, 0, 'a request that never ends: waited for up to MAX_WAIT_MS');
  stuck.look(1);
  t.equal(stuck.s.full, 1, 'then collected anyway');
});

t.test('idle_gc_s 0 turns it off; raised again, the owed collections come', async (t) => {
  const { s, look } = rig(0);
  s.begun = 1;
  look(1000);
  for (let i = 0; i < 30; i++) look(1000);
  t.same([s.young, s.full], [0, 0], 'off');
  s.idleS = 5;
  look(1000);
  look(RATE_WINDOW_MS);
  t.same(s.order, ['young', 'full'], 'the setting is read at each look');
});

t.test('start() looks on its own timer, which does not hold the process open, and close() stops it', async (t) => {
  let begun = 0;
  let clock = 0;
  const kinds: GcKind[] = [];
  // Each look reads the clock once: a second of it a look.
  const gc = new IdleGc({ idleS: () => 1, begun: () => begun, collect: (k) => kinds.push(k), tickMs: 5, now: () => (clock += 1000) });
  gc.start();
  gc.start(); // a second start adds no second timer
  begun = 1;
  await new Promise((r) => setTimeout(r, 300));
  t.same(kinds, ['young', 'full']);
  gc.close();
  begun = 2;
  await new Promise((r) => setTimeout(r, 200));
  t.same(kinds, ['young', 'full'], 'closed: no more looks');
});

/** The kinds of the collections `work` makes, as a gc performance observer sees them. */
async function kindsOf(work: () => void): Promise<number[]> {
  const kinds: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind);
  });
  obs.observe({ entryTypes: ['gc'] });
  work();
  await new Promise((r) => setTimeout(r, 50)); // gc entries are delivered asynchronously
  obs.disconnect();
  return kinds;
}

t.test("v8Gc() is V8's collections, young and full, and leaves no global gc behind", async (t) => {
  const hadGlobal = typeof (globalThis as { gc?: unknown }).gc === 'function';
  const gc = v8Gc()!;
  t.type(gc, 'function');
  t.equal(v8Gc(), gc, 'found once');
  if (!hadGlobal) t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', "the gateway's own context gets no global gc");
  // The full one first (it also ends any marking under way), then the young one on a heap with nothing else to do.
  t.ok((await kindsOf(() => gc('full'))).includes(constants.NODE_PERFORMANCE_GC_MAJOR), "'full' is a full collection");
  await new Promise((r) => setTimeout(r, 100));
  const young = await kindsOf(() => gc('young'));
  t.ok(young.includes(constants.NODE_PERFORMANCE_GC_MINOR), "'young' is a young collection");
  t.notOk(young.includes(constants.NODE_PERFORMANCE_GC_MAJOR), 'and not a full one');
});

t.test('the two steps after a busy spell shrink the young generation', async (t) => {
  const gc = v8Gc()!;
  // Grow the young generation the way a busy spell does (objects that live a little while), then collect.
  let keep: object[] = [];
  for (let i = 0; i < 400_000; i++) {
    keep.push({ i, s: `x${i}` });
    if (keep.length > 50_000) keep = [];
  }
  keep = [];
  // Then quiet, as the gateway is when it collects: the young collection at once, the full one the rate window later.
  gc('young');
  await new Promise((r) => setTimeout(r, RATE_WINDOW_MS + 500));
  const before = getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.physical_space_size;
  t.ok(before >= 8 * 1024 * 1024, `the loop grew the young generation (${before} bytes)`);
  gc('full');
  const after = getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.physical_space_size;
  t.ok(after < before, `the young generation shrinks (${before} -> ${after} bytes)`);
});

t.test("v8Gc()'s full collection compacts the old generation a busy spell left sparse", async (t) => {
  const gc = v8Gc()!;
  const oldSpace = () => getHeapSpaceStatistics().find((x) => x.space_name === 'old_space')!.space_size;
  // 400,000 small objects moved to the old generation (two full collections), then 19 of 20 let go: pages with a
  // little alive on each, which V8's own heuristics leave in place (measured: 56 MiB before and after a plain gc()).
  let keep: object[] = [];
  for (let i = 0; i < 400_000; i++) keep.push({ a: i, b: [i, i], c: `x${i}` });
  gc('full');
  gc('full');
  const before = oldSpace();
  keep = keep.filter((_, i) => i % 20 === 0);
  gc('full');
  const after = oldSpace();
  t.equal(keep.length, 20_000);
  t.ok(before > 40 * 1024 * 1024, `the old generation grew (${Math.round(before / 1048576)} MiB)`);
  t.ok(after < before / 2, `compacted: ${Math.round(before / 1048576)} -> ${Math.round(after / 1048576)} MiB`);
});
