import { build } from '../../src/app.js';
import { testConfig, DEMO_PROVIDER } from '../helpers/app.js';
import { exchange, requestBytes } from '../helpers/raw-http.js';
import { mkdtempSync } from 'node:fs';
const dir = mkdtempSync('/tmp/tg-dbg-');
const app = await build({ config: testConfig({ providers: { demo: DEMO_PROVIDER } }, dir), logger: { level: 'error' }, processMetrics: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;
const deep = `{"model":"demo/echo-1","messages":[{"role":"user","content":${'['.repeat(10_000)}${']'.repeat(10_000)}}]}`;
for (const [m, p, b] of [['POST', '/v1beta/models/%25:generateContent', '{}'], ['POST', '/v1/chat/completions', deep]] as [string, string, string][]) {
  const a = await exchange(port, requestBytes({ method: m, path: p, headers: [['content-type', 'application/json']], body: b }));
  console.log(m, p, a.status, a.body.slice(0, 300));
}
await app.close();
