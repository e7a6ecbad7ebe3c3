// HEAD on the event stream (src/api/live.ts) and on every other GET route: fastify adds HEAD to each GET route, and
// GET /api/live hijacks its reply and writes for ever, which Node drops for HEAD. Before, a HEAD /api/live got no
// status line, never ended, and held a subscription and a timer until the client hung up. Now it answers the
// stream's headers and ends at once, subscribing to nothing. Every other GET route's HEAD ends within a second too.

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { exchange, requestBytes } from '../helpers/raw-http.js';
import { waitFor } from '../helpers/wait.js';

const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } });
const port = Number(new URL(gw.url).port);

// The subscriptions of GET /api/live, counted where they are made: LiveRequests.onChange (its unsubscribe may be
// called more than once, by the request's and by the response's `close`).
const live = gw.app.tollgate.live;
const subscribe = live.onChange.bind(live);
const active = new Set<() => void>();
let mostSubscribed = 0;
live.onChange = (fn) => {
  active.add(fn);
  mostSubscribed = Math.max(mostSubscribed, active.size);
  const off = subscribe(fn);
  return () => {
    active.delete(fn);
    off();
  };
};
const subscribed = (): number => active.size;

/** The GET routes of the app, read from its route tree (a new route is covered without editing this file). */
function getRoutes(): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of gw.app.printRoutes().split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (m === null) continue;
    stack.length = m[1]!.length / 4;
    stack.push(m[2]!);
    if (m[3]?.split(', ').includes('GET')) out.push(stack.join(''));
  }
  return out;
}

t.test('HEAD /api/live: the stream\'s status and headers, ended at once, no subscription held', async (t) => {
  const started = Date.now();
  // exchange() reads until the server closes the connection (the request says `connection: close`).
  const answer = await exchange(port, requestBytes({ method: 'HEAD', path: '/api/live' }), 1000).catch((err: Error) => ({ status: 0, headers: {} as Record<string, string>, body: err.message }));
  t.ok(Date.now() - started < 1000, `answered and ended in ${Date.now() - started} ms`);
  t.equal(answer.status, 200);
  t.match(answer.headers['content-type'], /^text\/event-stream/);
  t.equal(answer.headers['cache-control'], 'no-store');
  t.equal(answer.body, '', 'no body');
  t.equal(mostSubscribed, 0, 'it never subscribed');
  t.equal(subscribed(), 0, 'the subscription count is zero');
});

t.test('GET /api/live still streams, and lets its subscription go when the client leaves', async (t) => {
  const stop = new AbortController();
  const res = await fetch(`${gw.url}/api/live`, { signal: stop.signal });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  t.match(first, /retry: 2000|event: inflight/, 'the stream starts');
  t.equal(subscribed(), 1, 'one subscription while it is open');
  stop.abort();
  await waitFor(() => subscribed() === 0);
  t.equal(subscribed(), 0, 'none once it left');
});

t.test('HEAD on every GET route ends within a second', async (t) => {
  const routes = getRoutes().map((r) => r.replace(/\*$/, '').replace(/:[^/]+/g, 'x'));
  t.ok(routes.includes('/api/live') && routes.includes('/api/usage'), `the routes read from the app: ${routes.length}`);
  for (const path of routes) {
    const answer = await exchange(port, requestBytes({ method: 'HEAD', path }), 1000).catch((err: Error) => ({ status: 0, body: err.message }));
    t.ok(answer.status >= 200 && answer.status < 500, `HEAD ${path}: ${answer.status} ${answer.body}`);
  }
  t.equal(subscribed(), 0, 'no subscription left behind');
});
