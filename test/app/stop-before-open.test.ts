// A stop while the embedded store is still opening (the gateway answers before its store is there) is not an outage:
// the rows it could not insert stay in the spool for the next start, logged at info, not as "storage down" at error
// level (which an operator's log alerting would page on at every deploy).

import t from 'tap';
import { Writable } from 'node:stream';
import { build } from '../../src/app.js';
import { DEMO_PROVIDER, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

t.test('a stop before the store opened logs no storage outage', async (t) => {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { level: number; msg: string }); done(); } });
  const app = await build({ config: testConfig({ providers: { demo: DEMO_PROVIDER } }, tempDir(t)), logger: { level: 'info', stream }, processMetrics: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(r.status, 200);
  await r.text();
  await app.close(); // at once: the embedded store waits for a quiet moment to open
  t.same(lines.filter((l) => l.level >= 50).map((l) => l.msg), [], 'nothing at error level');
});
