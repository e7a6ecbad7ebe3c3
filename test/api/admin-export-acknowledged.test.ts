// An export holds every request acknowledged before it (review s12d): the rows still in the spool (the last
// `flush_ms`, or a backlog the store has not taken) went missing from a 200 archive. And an export while the config
// file holds an edit the gateway refused answered 500 for everything: the archive now holds the effective config.
// Real sockets, the embedded store.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoProvidersYaml, startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'k-admin-acknowledged-0123456789';
const dir = tempDir(t);
const configFile = join(dir, 'config.yaml');
const configText = `server:
  api_keys:
    - { name: admin, key: "${KEY}", role: admin }
storage:
  data_dir: ${JSON.stringify(join(dir, 'data'))}
  batch: { flush_ms: 600000 }
alerts:
  channels:
    webhook: { url: "\${HOOK_URL}" }
${demoProvidersYaml()}`;
const HOOK_URL = 'http://127.0.0.1:9/services/T000/B000/SECRET-PATH-TOKEN';
writeFileSync(configFile, configText);
const { parse } = await import('yaml');
const gw = await startApp(t, parse(configText) as Record<string, unknown>, { configFile, env: { HOOK_URL } });
// main.ts gives the holder the text it read; startApp does not.
gw.holder.replace(gw.holder.current, { fileText: configText });

async function exported(): Promise<{ status: number; manifest: { tables: Record<string, { rows: number }>; config: { source: string } } | null; config: string }> {
  const reauth = await fetch(`${gw.url}/api/admin/reauth`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } });
  const { token } = (await reauth.json()) as { token: string };
  const res = await fetch(`${gw.url}/api/admin/export`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, manifest: null, config: '' };
  const file = join(tempDir(t), 'a.tar.gz');
  writeFileSync(file, body);
  const read = (entry: string) => execFileSync('tar', ['-xzOf', file, entry], { encoding: 'utf8' });
  return { status: 200, manifest: JSON.parse(read('manifest.json')), config: read('config.yaml') };
}

t.test('requests acknowledged and still spooled are in the archive', async (t) => {
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(res.status, 200);
  }
  t.equal(gw.app.tollgate.writer.depth, 3, 'the three rows wait in the spool (flush_ms 10 minutes)');
  const { status, manifest } = await exported();
  t.equal(status, 200);
  t.equal(manifest?.tables.requests?.rows, 3, 'all three in the archive');
  t.equal(gw.app.tollgate.writer.depth, 0, 'written first');
});

t.test('a config file the gateway refused: the archive holds the text it runs on, not a 500 nor the values of its references', async (t) => {
  appendFileSync(configFile, '\nbudgets: [oops\n');
  const { status, manifest, config } = await exported();
  t.equal(status, 200);
  t.equal(manifest?.config.source, 'file');
  t.match(config, 'url: "${HOOK_URL}"', 'the reference as written');
  t.notMatch(config, 'SECRET-PATH-TOKEN', 'not its value (a rendering of the running config held it)');
  t.notMatch(config, 'oops', 'the text the gateway runs on, not the refused edit');
  writeFileSync(configFile, configText);
});
