// A settings edit under a section whose keys were all commented out on disk (`budgets:` with nothing under it, a null:
// a file that does not load as it is) sets the key there, which makes the file load again; before, yaml's setIn threw "Expected YAML collection at budgets" and the console got a 500
// TOLLGATE_ERR_INTERNAL. A section that holds something other than a mapping (`budgets: 5`, edited on disk after the
// start) is the 409 of a file to fix by hand, as for any file the edit cannot apply to. On a real app and config file.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = `server:
  host: 127.0.0.1

storage:
  data_dir: ${join(dir, 'data')}

providers:
  demo:
    group: paid
    format: mock
    mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }
    models:
      echo-1: { kind: llm }

budgets:
  daily_usd: 3
`;
writeFileSync(file, TEXT);
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

const put = async (body: unknown) => {
  const res = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as { error?: { code?: string; message?: string } } };
};

t.test('a key set under a section with nothing in it', async (t) => {
  // The operator comments the key out on disk (the file no longer loads: the running settings stay).
  writeFileSync(file, TEXT.replace('  daily_usd: 3', '  # daily_usd: 3'));
  const r = await put({ daily_usd: 7 });
  t.equal(r.status, 200, JSON.stringify(r.json));
  t.same(parse(readFileSync(file, 'utf8')).budgets, { daily_usd: 7 }, 'the file says it');
  t.equal(gw.holder.current.budgets.daily_usd, 7, 'and it is in force');
});

t.test('a section that is not a mapping: 409, the file to fix by hand, unchanged', async (t) => {
  const broken = readFileSync(file, 'utf8').replace(/budgets:[\s\S]*$/, 'budgets: 5\n');
  writeFileSync(file, broken);
  const r = await put({ daily_usd: 8 });
  t.equal(r.status, 409, JSON.stringify(r.json));
  t.equal(r.json.error?.code, 'TOLLGATE_ERR_CONFIG_CONFLICT');
  t.match(r.json.error?.message, /budgets is not a mapping/);
  t.equal(readFileSync(file, 'utf8'), broken, 'nothing written');
});
