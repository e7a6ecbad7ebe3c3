// A settings edit that writes the config file again (a key added: the Document API) keeps every explicitly tagged
// value as the file wrote it, tag and text (src/config/text-checks.ts parseForRewrite). Before, yaml wrote them from
// their values: `port: !!int 0070` became `port: !!int 70`, `!!float 1e3` `!!float 1e+3`, `name: !!str 0070`
// `name: !!str "0070"`, a verbatim `!<tag:yaml.org,2002:float>` `!!float`, though the edit was of another field.
// On a real app and a real config file: the file's bytes, and the values in force.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TAGGED = [
  '  port: !!int 0070',
  '    name: !!str 0070',
  '    price: { input: !!float 1.50, output: !<tag:yaml.org,2002:float> 2.0 }',
  '  daily_usd: !!float 1e1',
  '  monthly_usd: !!int "0200"',
];
const TEXT = `server:
  host: 127.0.0.1
${TAGGED[0]}

storage:
  data_dir: ${join(dir, 'data')}

providers:
  demo:
${TAGGED[1]}
    group: paid
    format: mock
${TAGGED[2]}
    mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }
    models:
      echo-1: { kind: llm }

budgets:
${TAGGED[3]}
${TAGGED[4]}
`;
writeFileSync(file, TEXT);
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

t.test('an edit of the alerts, a key added: every tagged line is written back byte for byte', async (t) => {
  const res = await fetch(`${gw.url}/api/settings/alerts`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ thresholds: { daily: [50, 100] } }),
  });
  t.equal(res.status, 200, await res.text());
  const text = readFileSync(file, 'utf8');
  t.match(text, /\nalerts:\n {2}thresholds:\n {4}daily:/, 'the file was written again, the alerts added');
  for (const line of TAGGED) t.ok(text.includes(`\n${line}\n`), `'${line.trim()}' kept as written`);
  t.equal(text, `${TEXT}alerts:\n  thresholds:\n    daily: [ 50, 100 ]\n`, 'every other byte kept too');
  const cfg = gw.holder.current;
  t.same(
    [cfg.server.port, cfg.providers.demo!.name, cfg.providers.demo!.price, cfg.budgets.daily_usd, cfg.budgets.monthly_usd],
    [70, '0070', { input: 1.5, output: 2 }, 10, 200],
    'the values in force, read from the file written again',
  );
  t.same(cfg.alerts.thresholds.daily, [50, 100]);
});
