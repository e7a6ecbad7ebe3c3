// A process killed between a segment's insert and its delete, and the next process's replay of that segment
// (test/store/replay-landed.test.ts, replay-unlanded.test.ts: one file each, the embedded engine binds one data
// directory per process). The first process is a child on the built modules (dist/): it spools rows, seals them,
// inserts the segment as the writer does (its lines, its name as token) or not, and kills itself before the delete.
// A kill inside the insert, after `requests` took the rows and before a view did, is made by detaching the views
// first (`DETACH` without PERMANENTLY: the next process's engine attaches them again).

import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openStore } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { settleLanded, startSpan } from '../../src/store/rollup-repair.js';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { BatchWriter } from '../../src/store/writer.js';
import { Spool } from '../../src/store/spool.js';
import { tempDir } from './tmp.js';
import { rec } from './usage-rows.js';
import { leftoversRead } from './spool.js';

const DIST = pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', 'store')).href;

/** Row `i` of a test, tagged with `tag` (its api key name) so that each test counts only its own rows. */
const row = (tag: string, i: number): RequestRow => rec({ at: new Date(Date.UTC(2026, 10, 20, 9) + i * 1000).toISOString(), model: 'paid/m', key: tag, usage: [3, 2] });

/**
 * How far the first process's insert got: not made, landed whole, into `requests` only, or into `requests` and the
 * hourly rollup but not the daily one.
 */
export type Landed = 'none' | 'whole' | 'table' | 'hourly';

/** The first process: spool `rows`, seal them, insert the segment (`landed`) as the writer does, and die with SIGKILL. */
export async function firstProcess(dataDir: string, spoolDir: string, rows: RequestRow[], landed: Landed): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const rowsFile = join(dataDir, 'first-process-rows.json'); // a file: an environment variable takes 128 KiB at most
  writeFileSync(rowsFile, JSON.stringify(rows));
  const code = `
    const { openStore } = await import(${JSON.stringify(`${DIST}/client.js`)});
    const { migrate } = await import(${JSON.stringify(`${DIST}/migrations.js`)});
    const { Spool } = await import(${JSON.stringify(`${DIST}/spool.js`)});
    const { REQUEST_COLUMNS } = await import(${JSON.stringify(`${DIST}/rows.js`)});
    const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: process.env.DATA_DIR, username: 'default', password: '' });
    await migrate(store);
    const spool = new Spool({ dir: process.env.SPOOL_DIR, commitMs: 1000, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));
    for (const r of JSON.parse((await import('node:fs')).readFileSync(process.env.ROWS_FILE, 'utf8'))) spool.append(r);
    await new Promise((r) => setImmediate(r));
    const [seg] = spool.seal();
    const landed = process.env.LANDED;
    if (landed === 'table') await store.command('DETACH VIEW tollgate.usage_hourly_mv');
    if (landed === 'hourly') await store.command('DETACH VIEW tollgate.usage_daily_mv');
    const { lines, columns } = spool.readLines(seg);
    if (landed !== 'none') await store.insertLines('requests', lines, 'spool-' + seg.name, columns);
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, DATA_DIR: dataDir, SPOOL_DIR: spoolDir, ROWS_FILE: rowsFile, LANDED: landed },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const signal = await new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig)));
  if (signal !== 'SIGKILL') throw new Error(`the first process ended with ${String(signal)}, not its own SIGKILL`);
}

/** The first process leaves one segment of 7 rows (inserted before its kill as `landed` says); this one replays it. */
export async function replayAfterKill(t: Test, landed: Landed): Promise<void> {
  const dir = tempDir(t, 'tollgate-replay-');
  const dataDir = join(dir, 'data');
  const spoolDir = join(dir, 'spool');
  const tag = `landed-${landed}`;
  const rows = Array.from({ length: 7 }, (_, i) => row(tag, i));
  await firstProcess(dataDir, spoolDir, rows, landed);

  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: dataDir, username: 'default', password: '' });
  t.teardown(() => store.close());
  await migrate(store);
  const left = readdirSync(spoolDir); // the first process's files, before this one opens the spool
  const spool = new Spool<RequestRow>({ dir: spoolDir, commitMs: 1000, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));
  t.same((await leftoversRead(spool)), { segments: 1, rows: 7, interrupted: 0 }, 'the segment the first process left is found');
  const written: number[] = [];
  // As the app makes it: a leftover found in the table has the rollups made whole for its rows.
  const writer = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000, settleLanded: (ids, rows) => settleLanded(store, ids, startSpan(rows)) }, {
    written: (n) => written.push(n), dropped: () => undefined, error: () => undefined, state: () => undefined,
  });
  await writer.flush();
  await writer.close();
  t.same(written, [7], 'its rows are reported written, once');
  t.same(readdirSync(spoolDir).filter((f) => left.includes(f)), [], 'the segment the first process left is gone');
  const [c] = await store.query<Record<string, string>>(
    `SELECT (SELECT count() FROM ${store.t('requests')} WHERE api_key_name = {tag:String}) AS raw,
            (SELECT uniqExact(request_id) FROM ${store.t('requests')} WHERE api_key_name = {tag:String}) AS ids,
            (SELECT sum(rows) FROM ${store.t('usage_hourly')} WHERE api_key_name = {tag:String}) AS hourly,
            (SELECT sum(rows) FROM ${store.t('usage_daily')} WHERE api_key_name = {tag:String}) AS daily,
            (SELECT toString(sum(total_tokens)) || ' ' || toString(sum(cost)) FROM ${store.t('requests')} WHERE api_key_name = {tag:String}) AS raw_sums,
            (SELECT toString(sum(total_tokens)) || ' ' || toString(sum(cost)) FROM ${store.t('usage_hourly')} WHERE api_key_name = {tag:String}) AS hourly_sums,
            (SELECT toString(sum(total_tokens)) || ' ' || toString(sum(cost)) FROM ${store.t('usage_daily')} WHERE api_key_name = {tag:String}) AS daily_sums`,
    { tag },
  );
  t.same({ raw: Number(c!.raw), ids: Number(c!.ids), hourly: Number(c!.hourly), daily: Number(c!.daily) }, { raw: 7, ids: 7, hourly: 7, daily: 7 }, 'each row once in the table, the hourly and the daily rollup');
  t.same([c!.hourly_sums, c!.daily_sums], [c!.raw_sums, c!.raw_sums], `tokens and cost in both rollups as in the table (${c!.raw_sums})`);
}
