// Settings edits of a config file written with CRLF line ends (a Windows editor's) or a UTF-8 byte order mark, on a
// real app and config file: whatever the edit (a scalar set, a key or a section added, a key removed), the file is
// written back with CRLF on every line, the new ones included, and keeps its byte order mark; the file loads as the
// edit asked. Before, an edit that added or removed a key wrote the whole file with LF line ends and dropped the mark.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = `# Line ends test config
server:
  host: 127.0.0.1

storage:
  data_dir: ${join(dir, 'data')}

providers:
  demo:
    format: mock
    group: paid
    mock: { chunks: 1, latency_ms: 0 }
    price: { input: 1, output: 2 }
    models:
      echo-1: { kind: llm }

budgets:
  daily_usd: 10        # the day's ceiling
  timezone: UTC
`;
const CRLF = TEXT.replace(/\n/g, '\r\n');
const LINES = TEXT.split('\n').length - 1;
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

/** Line ends on disk: CRLF, and LF with no CR before it. */
const ends = (bytes: string) => ({ crlf: bytes.split('\r\n').length - 1, bareLf: bytes.split(/(?<!\r)\n/).length - 1 });

async function put(path: string, body: unknown) {
  const res = await fetch(`${gw.url}${path}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as unknown };
}

const cases: { name: string; path: string; body: unknown; lines: number; loads: (c: ReturnType<typeof loadConfigFile>) => unknown; want: unknown }[] = [
  { name: 'a scalar set', path: '/api/settings/budgets', body: { daily_usd: 12.5 }, lines: LINES, loads: (c) => c.budgets.daily_usd, want: 12.5 },
  { name: 'a key added', path: '/api/settings/budgets', body: { monthly_usd: 300 }, lines: LINES + 1, loads: (c) => c.budgets.monthly_usd, want: 300 },
  {
    name: 'a section added', path: '/api/settings/alerts', body: { thresholds: { daily: [50, 100] } }, lines: LINES + 3,
    loads: (c) => c.alerts.thresholds.daily, want: [50, 100],
  },
  {
    name: "a model's price added", path: '/api/settings/prices/demo', body: { models: { 'echo-1': { output: 4 } } }, lines: LINES,
    loads: (c) => c.providers.demo!.models['echo-1']!.price, want: { output: 4 },
  },
  { name: 'a key removed', path: '/api/settings/prices/demo', body: { price: null }, lines: LINES - 1, loads: (c) => c.providers.demo!.price, want: undefined },
];

for (const bom of ['', '\uFEFF']) {
  for (const c of cases) {
    t.test(`${c.name}${bom === '' ? '' : ', with a byte order mark'}: CRLF on every line of the file written`, async (t) => {
      writeFileSync(file, bom + CRLF);
      const r = await put(c.path, c.body);
      t.equal(r.status, 200, r.status === 200 ? 'the edit is taken' : JSON.stringify(r.body));
      const bytes = readFileSync(file, 'utf8');
      t.same(ends(bytes), { crlf: c.lines, bareLf: 0 }, 'every line ends CRLF, none LF');
      t.equal(bytes.startsWith('\uFEFF'), bom !== '', bom === '' ? 'no byte order mark added' : 'the byte order mark kept');
      t.same(c.loads(loadConfigFile(file)), c.want, 'the file loads as the edit asked');
      t.ok(bytes.includes("daily_usd: 1"), 'the rest of the file is there');
    });
  }
}

t.test('an LF file stays LF, with no byte order mark', async (t) => {
  writeFileSync(file, TEXT);
  t.equal((await put('/api/settings/alerts', { thresholds: { daily: [50, 100] } })).status, 200);
  const bytes = readFileSync(file, 'utf8');
  t.same(ends(bytes), { crlf: 0, bareLf: LINES + 3 });
  t.notOk(bytes.startsWith('\uFEFF'));
  t.same(loadConfigFile(file).alerts.thresholds.daily, [50, 100]);
});
