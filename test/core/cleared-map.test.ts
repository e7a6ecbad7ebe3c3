// ClearedMap: a Map of the requests in flight whose deleted values are let go at once (src/core/cleared-map.ts).
import t from 'tap';
import { ClearedMap } from '../../src/core/cleared-map.js';

t.test('reads as a Map does', async (t) => {
  const m = new ClearedMap<string, { n: number }>();
  const a = { n: 1 };
  const b = { n: 2 };
  t.equal(m.set('a', a), m, 'set returns the map');
  m.set('b', b);
  t.equal(m.size, 2);
  t.equal(m.get('a'), a);
  t.ok(m.has('b'));
  t.same([...m.values()], [a, b], 'values in insertion order');
  t.same([...m], [['a', a], ['b', b]], 'entries in insertion order');
  const a2 = { n: 3 };
  m.set('a', a2);
  t.equal(m.get('a'), a2, 'a second set replaces the value');
  t.equal(m.size, 2, 'and adds no entry');
  t.same([...m.entries()].map(([k]) => k), ['a', 'b'], 'the replaced entry keeps its place');
  t.ok(m.delete('a'));
  t.notOk(m.delete('a'), 'deleting what is gone says so');
  t.notOk(m.has('a'));
  t.equal(m.get('a'), undefined);
  t.equal(m.size, 1);
  t.same([...m.values()], [b]);
});

t.test('a value deleted while the map is iterated is not yielded', async (t) => {
  const m = new ClearedMap<number, string>();
  for (let i = 0; i < 5; i++) m.set(i, `v${i}`);
  const seen: string[] = [];
  for (const [k, v] of m) {
    seen.push(v);
    if (k === 1) m.delete(3);
  }
  t.same(seen, ['v0', 'v1', 'v2', 'v4']);
});

t.test('many entries added and deleted leave it empty and correct', async (t) => {
  const m = new ClearedMap<string, object>();
  for (let i = 0; i < 10_000; i++) {
    m.set(`r${i}`, { i });
    if (i >= 16) m.delete(`r${i - 16}`);
  }
  t.equal(m.size, 16);
  t.same([...m.values()].map((v) => (v as { i: number }).i), Array.from({ length: 16 }, (_, k) => 9_984 + k));
});
