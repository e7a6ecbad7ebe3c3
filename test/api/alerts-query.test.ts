// GET /api/alerts reads its query as every /api read does (src/api/analytics/params.ts QueryReader): a bad, unknown or
// repeated parameter is a 400 TOLLGATE_ERR_INVALID_QUERY whose `param` names it, and an empty value counts as absent.
// Before, `?limit=0` and `?unread=yes` were TOLLGATE_ERR_INVALID_REQUEST, `?limit=` a 400, and `?limit=0x10`,
// `?limit=1e2` and `?provder=x` were accepted (the typo answered the unfiltered list).

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { send, type Answer } from '../helpers/raw-http.js';

const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } });

interface Listed {
  alerts: { id: string; read: boolean }[];
  unread: number;
}
const error = (a: Answer): { code?: string; param?: string | null } => (JSON.parse(a.body) as { error: { code?: string; param?: string | null } }).error;
const list = async (query: string): Promise<Answer> => send(gw.url, 'GET', `/api/alerts${query}`);

// Three alerts in the dashboard list: a test notification is one each.
t.before(async () => {
  for (let i = 0; i < 3; i++) {
    const sent = await send(gw.url, 'POST', '/api/alerts/test', { body: '{}' });
    if (sent.status !== 200) throw new Error(`POST /api/alerts/test: ${sent.status} ${sent.body}`);
  }
});

t.test('a bad, unknown or repeated parameter: 400 TOLLGATE_ERR_INVALID_QUERY naming it', async (t) => {
  const cases: [string, string][] = [
    ['?limit=0', 'limit'],
    ['?limit=501', 'limit'],
    ['?limit=0x10', 'limit'],
    ['?limit=1e2', 'limit'],
    ['?limit=-1', 'limit'],
    ['?limit=2.0', 'limit'],
    ['?limit=%202', 'limit'],
    ['?limit=2&limit=3', 'limit'],
    ['?unread=yes', 'unread'],
    ['?unread=1', 'unread'],
    ['?unread=TRUE', 'unread'],
    ['?provder=x', 'provder'],
    ['?limit=2&unred=true', 'unred'],
  ];
  for (const [query, param] of cases) {
    const a = await list(query);
    t.equal(a.status, 400, `${query}: 400`);
    t.match(error(a), { code: 'TOLLGATE_ERR_INVALID_QUERY', param }, `${query}: names ${param}`);
  }
});

t.test('good queries: an empty value counts as absent; limit and unread apply', async (t) => {
  const all = JSON.parse((await list('')).body) as Listed;
  t.equal(all.alerts.length, 3, 'no query: every alert (default limit 50)');
  for (const query of ['?limit=', '?unread=', '?limit=&unread=']) {
    const a = await list(query);
    t.equal(a.status, 200, `${query}: 200`);
    t.same((JSON.parse(a.body) as Listed).alerts.map((x) => x.id), all.alerts.map((x) => x.id), `${query}: as if absent`);
  }
  const two = await list('?limit=2');
  t.equal(two.status, 200);
  t.same((JSON.parse(two.body) as Listed).alerts.map((x) => x.id), all.alerts.slice(0, 2).map((x) => x.id), '?limit=2: the newest two');
  t.equal((JSON.parse((await list('?limit=500')).body) as Listed).alerts.length, 3, '?limit=500: the largest accepted');
  t.equal((await list('?key=anything&limit=1')).status, 200, '`key` (the gateway key) is taken and ignored');

  const marked = await send(gw.url, 'POST', '/api/alerts/read', { body: JSON.stringify({ ids: [all.alerts[0]!.id] }) });
  t.equal(marked.status, 200);
  const unread = JSON.parse((await list('?unread=true')).body) as Listed;
  t.same(unread.alerts.map((x) => x.id), all.alerts.slice(1).map((x) => x.id), '?unread=true: the unread ones only');
  t.equal(unread.unread, 2);
  t.equal((JSON.parse((await list('?unread=false')).body) as Listed).alerts.length, 3, '?unread=false: every alert');
});
