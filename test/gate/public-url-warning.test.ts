// A keyless gateway answers loopback names only (src/gate/origin.ts), so a tunnel's public name gets 403s: with
// server.public_url set and no keys, the start says so in a warning naming the setting, rather than leaving the
// operator to find the 403s (docs/security.md, "Browsers"). With keys, no such warning.

import t from 'tap';
import { Writable } from 'node:stream';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { DEMO_PROVIDER, testConfig } from '../helpers/app.js';
import { memoryTracing } from '../helpers/spans.js';
import { tempDir } from '../helpers/tmp.js';

async function warnings(server: Record<string, unknown>): Promise<{ path?: string; msg: string }[]> {
  const lines: { level: number; path?: string; msg: string }[] = [];
  const stream = new Writable({ write: (c: Buffer, _e, cb) => void (lines.push(JSON.parse(c.toString('utf8')) as (typeof lines)[number]), cb()) });
  const app = await build({
    config: new ConfigHolder(testConfig({ server, providers: { demo: DEMO_PROVIDER } }, tempDir(t))),
    tracerProvider: memoryTracing().provider, logger: { level: 'warn', stream }, processMetrics: false,
  });
  await app.close();
  return lines.filter((l) => l.level === 40);
}

t.test('public_url without keys: a warning naming it', async (t) => {
  const w = await warnings({ public_url: 'https://gw.example.com' });
  t.ok(w.some((l) => l.path === 'server.public_url' && /no server\.api_keys: requests through it are refused \(403\)/.test(l.msg)));
});

t.test('public_url with keys, or no public_url: no such warning', async (t) => {
  for (const server of [{ public_url: 'https://gw.example.com', api_keys: [{ name: 'a', key: 'k-0123456789abcdefgh' }] }, {}]) {
    t.notOk((await warnings(server)).some((l) => l.path === 'server.public_url'), JSON.stringify(server));
  }
});
