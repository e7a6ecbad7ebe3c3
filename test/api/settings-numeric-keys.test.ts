// A provider whose id the file writes as an integer key (`2024:`) is served as "2024" (the load reads every key as a
// string), and its prices are set through the settings API like any other's: the edit finds the key 2024 rather than
// making a string key "2024" beside it (which answered 400 "providers[2024].group: is required", nothing written). On a
// real app and config file.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
// the provider's id, and a model's, written as numbers: YAML reads them as the integer 2024 and the float 3.5
const TEXT = [
  'server: { host: 127.0.0.1 }',
  `storage: { data_dir: ${join(dir, 'data')} }`,
  'providers:',
  '  2024:',
  '    group: paid',
  '    format: mock',
  '    mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }',
  '    models: { echo-1: { kind: llm }, 3.5: { kind: llm } }',
  '',
].join('\n');
writeFileSync(file, TEXT);
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

t.test('PUT /api/settings/prices/2024 prices the models of the integer key 2024', async (t) => {
  const res = await fetch(`${gw.url}/api/settings/prices/2024`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ models: { 'echo-1': { input: 1, output: 2 }, '3.5': { input: 3, output: 4 } } }),
  });
  t.equal(res.status, 200, JSON.stringify(await res.clone().json()));
  const text = readFileSync(file, 'utf8');
  t.equal(text.match(/^ {2}\S.*:$/gm)?.join('|'), '  2024:', 'one provider key, the one the file had');
  t.equal(text.match(/3\.5/g)?.length, 1, 'one model key 3.5');
  t.same(parse(text).providers['2024'].models, { 'echo-1': { kind: 'llm', price: { input: 1, output: 2 } }, '3.5': { kind: 'llm', price: { input: 3, output: 4 } } }, 'the prices under it');
  const models = gw.holder.current.providers['2024']!.models;
  t.same([models['echo-1']!.price, models['3.5']!.price], [{ input: 1, output: 2 }, { input: 3, output: 4 }], 'and in force');
});
