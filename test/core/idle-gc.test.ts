// The collection when quiet (src/core/idle-gc.ts): when it happens on a clock the test moves, and that the function it
// finds really is V8's full collection, without a global `gc` left in the gateway's context.

import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import t from 'tap';
import { IdleGc, fullGc } from '../../src/core/idle-gc.js';

function rig(idleS = 10) {
  const s = { now: 1_000_000, begun: 0, idleS, collected: 0, reported: [] as number[] };
  const gc = new IdleGc({
    idleS: () => s.idleS,
    begun: () => s.begun,
    collect: () => s.collected++,
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
  const { s, gc, look } = rig();
  for (let i = 0; i < 100; i++) look(1000);
  t.equal(s.collected, 0);
  t.equal(gc.collections, 0);
});

t.test('one collection once the quiet after requests has lasted idle_gc_s, and one only', async (t) => {
  const { s, gc, look } = rig(10);
  s.begun = 3;
  look(1000); // the requests are seen at this look: the quiet is counted from here
  look(9_999);
  t.equal(s.collected, 0, 'not before the quiet has lasted 10 s');
  look(1);
  t.equal(s.collected, 1, 'at 10 s of quiet');
  t.equal(gc.collections, 1);
  t.equal(s.reported.length, 1, 'its duration is reported');
  t.ok(s.reported[0]! >= 0);
  for (let i = 0; i < 60; i++) look(1000);
  t.equal(s.collected, 1, 'a quiet spell owes one collection, not one a tick');
  s.begun = 4;
  look(1000);
  look(10_000);
  t.equal(s.collected, 2, 'the next busy spell owes the next');
});

t.test('requests that keep coming hold it off', async (t) => {
  const { s, look } = rig(10);
  for (let i = 0; i < 60; i++) {
    s.begun++;
    look(1000);
  }
  t.equal(s.collected, 0, 'a minute of steady traffic: none');
  look(10_000);
  t.equal(s.collected, 1, 'then quiet: one');
});

t.test('idle_gc_s 0 turns it off; raised again, the owed collection comes', async (t) => {
  const { s, look } = rig(0);
  s.begun = 1;
  look(1000);
  for (let i = 0; i < 30; i++) look(1000);
  t.equal(s.collected, 0, 'off');
  s.idleS = 5;
  look(1000);
  t.equal(s.collected, 1, 'the setting is read at each look');
});

t.test('start() looks on its own timer, which does not hold the process open, and close() stops it', async (t) => {
  let begun = 0;
  let collected = 0;
  const gc = new IdleGc({ idleS: () => 0.05, begun: () => begun, collect: () => collected++, tickMs: 10 });
  gc.start();
  gc.start(); // a second start adds no second timer
  begun = 1;
  await new Promise((r) => setTimeout(r, 200));
  t.equal(collected, 1);
  gc.close();
  begun = 2;
  await new Promise((r) => setTimeout(r, 200));
  t.equal(collected, 1, 'closed: no more looks');
});

t.test("fullGc() is V8's full collection, and leaves no global gc behind", async (t) => {
  const hadGlobal = typeof (globalThis as { gc?: unknown }).gc === 'function';
  const gc = fullGc();
  t.type(gc, 'function');
  t.equal(fullGc(), gc, 'found once');
  if (!hadGlobal) t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', "the gateway's own context gets no global gc");
  const kinds: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) kinds.push(((e as unknown as { detail: { kind: number } }).detail).kind);
  });
  obs.observe({ entryTypes: ['gc'] });
  // Grow the young generation the way a busy spell does (objects that live a little while), then collect.
  let keep: object[] = [];
  for (let i = 0; i < 400_000; i++) {
    keep.push({ i, s: `x${i}` });
    if (keep.length > 50_000) keep = [];
  }
  keep = [];
  // Then quiet, as the gateway is when it collects: V8 shrinks the young generation when little was allocated lately.
  await new Promise((r) => setTimeout(r, 6000));
  const before = getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.physical_space_size;
  t.ok(before >= 8 * 1024 * 1024, `the loop grew the young generation (${before} bytes)`);
  gc!();
  await new Promise((r) => setTimeout(r, 50)); // gc entries are delivered asynchronously
  obs.disconnect();
  t.ok(kinds.includes(constants.NODE_PERFORMANCE_GC_MAJOR), 'a major collection ran');
  const after = getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.physical_space_size;
  t.ok(after < before, `the young generation shrinks (${before} -> ${after} bytes)`);
});
