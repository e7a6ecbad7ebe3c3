// The store's opening waits for a quiet request path (issue 17, start): on the embedded engine, whose load blocks the
// event loop, the app starts it with startWhenQuiet after listening. It starts once no request has begun or been in
// flight for quietMs, at maxMs at the latest, at once when the store is used meanwhile, and never after a close.
// A real store (the embedded engine) is opened each time.

import t from 'tap';
import { openTestStore } from '../helpers/store-paths.js';
import { StoreOpening, type Activity } from '../../src/store/opening.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const WAITING = /opens once the requests of the start are answered/;

t.test('busy: waits; quiet for quietMs: opens', async (t) => {
  const store = await openTestStore(t, { database: 'quiet_busy' });
  const opening = new StoreOpening(store);
  t.teardown(() => opening.close());
  let inFlight = 1;
  let begun = 0;
  opening.startWhenQuiet((): Activity => ({ begun, inFlight }), { quietMs: 150, maxMs: 60_000 });
  await sleep(300);
  t.match(opening.reason, WAITING, 'a request in flight: still waiting after 300 ms');
  // requests keep beginning (every look sees a new one) and ending: still busy
  inFlight = 0;
  const busy = setInterval(() => begun++, 5);
  await sleep(300);
  clearInterval(busy);
  t.match(opening.reason, WAITING, 'requests beginning all the time: still waiting');
  const quietAt = performance.now();
  await sleep(50);
  t.match(opening.reason, WAITING, 'quiet for less than quietMs: still waiting');
  await opening.ready;
  t.ok(performance.now() - quietAt >= 150, 'opened no sooner than quietMs after the last request');
  t.equal(opening.reason, null, 'open');
  const rows = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('schema_migrations')} FINAL`);
  t.ok(Number(rows[0]?.n) >= 7, 'and migrated');
});

t.test('busy all the time: opens at maxMs', async (t) => {
  const store = await openTestStore(t, { database: 'quiet_max' });
  const opening = new StoreOpening(store);
  t.teardown(() => opening.close());
  let begun = 0;
  const t0 = performance.now();
  opening.startWhenQuiet(() => ({ begun: begun++, inFlight: 3 }), { quietMs: 50, maxMs: 250 });
  await opening.ready;
  t.ok(performance.now() - t0 >= 250, 'not before maxMs');
  t.equal(opening.reason, null, 'open');
});

t.test('a store operation while waiting opens it at once', async (t) => {
  const store = await openTestStore(t, { database: 'quiet_use' });
  const opening = new StoreOpening(store);
  t.teardown(() => opening.close());
  opening.startWhenQuiet(() => ({ begun: 0, inFlight: 1 }), { quietMs: 50, maxMs: 600_000 });
  t.match(opening.reason, WAITING);
  const gated = store.gated(opening);
  const rows = await gated.query<{ one: number }>('SELECT 1 AS one');
  t.same(rows, [{ one: 1 }], 'the read waited for the opening it started');
  t.equal(opening.reason, null, 'open');
});

t.test('closed while waiting: never opens', async (t) => {
  const store = await openTestStore(t, { database: 'quiet_closed' });
  const opening = new StoreOpening(store);
  let looks = 0;
  opening.startWhenQuiet(() => {
    looks++;
    return { begun: 0, inFlight: 1 };
  }, { quietMs: 50, maxMs: 100 });
  await sleep(30);
  await opening.close();
  await t.rejects(opening.ready, { code: 'TOLLGATE_ERR_STORE_UNAVAILABLE' }, 'ready rejects');
  const seen = looks;
  await sleep(200);
  t.equal(looks, seen, 'it stopped looking at the request path');
  t.equal(opening.reason, 'the store is closed', 'and did not open at maxMs');
});
