// V8's allocation-site pretenuring, off in the gateway's process (src/core/pretenuring.ts): seen in V8's own account
// of its pretenuring decisions (`--trace-pretenuring-statistics`) in a child process whose workload makes V8 move an
// allocation site's objects to the old generation: it does so without the switch, never once with it, and an
// operator's `--allocation-site-pretenuring` on node's command line wins over it.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { namesV8Flag } from '../../src/core/v8-flags.js';

const BUILT = fileURLToPath(new URL('../../dist/core/pretenuring.js', import.meta.url));
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** V8's decisions to make an allocation site's objects in the old generation, from its trace. */
const tenures = (stdout: string) => stdout.split('\n').filter((l) => l.includes('=> tenure')).length;
const WORKLOAD = `
    const keep = [];
    const make = (i) => ({ a: i, b: 'x' + i, c: [i, i + 1] });
    for (let i = 0; i < 400000; i++) keep.push(make(i));`;

/**
 * A child that (when `stop`) calls the built module's switch, then keeps 400,000 objects of one literal alive across
 * the young generation's collections at its full (1 MiB) size: what V8 pretenures. Its decisions to tenure a site
 * (`=> tenure` lines) are counted.
 */
function child(stop: boolean, flags: readonly string[] = []) {
  const script = `
    const { stopPretenuring } = await import(${JSON.stringify(BUILT)});
    const stopped = ${stop} ? stopPretenuring() : null;${WORKLOAD}
    console.log(JSON.stringify({ stopped, kept: keep.length }));`;
  const args = [...flags, '--max-semi-space-size=1', '--trace-pretenuring-statistics', '--input-type=module', '-e', script];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 });
  const lines = r.stdout.split('\n');
  type Result = { stopped: boolean | null; kept: number } | null;
  const result = JSON.parse(lines.find((l) => l.startsWith('{')) ?? 'null') as Result;
  return { status: r.status, result, tenured: tenures(r.stdout), stderr: r.stderr };
}

t.test('the workload makes V8 pretenure without the switch (so the next test can fail)', async (t) => {
  const c = child(false);
  t.equal(c.status, 0, c.stderr);
  t.equal(c.result?.kept, 400000);
  t.ok(c.tenured > 0, `sites tenured: ${c.tenured}`);
});

t.test('with the switch V8 tenures no site', async (t) => {
  const c = child(true);
  t.equal(c.status, 0, c.stderr);
  t.same(c.result, { stopped: true, kept: 400000 });
  t.equal(c.tenured, 0);
});

t.test("an operator's --allocation-site-pretenuring on node's command line wins", async (t) => {
  const c = child(true, ['--allocation-site-pretenuring']);
  t.equal(c.status, 0, c.stderr);
  t.same(c.result, { stopped: false, kept: 400000 });
  t.ok(c.tenured > 0, `sites tenured: ${c.tenured}`);
});

t.test("the flag is recognised however node's command line spells it", async (t) => {
  const spellings = ['--allocation-site-pretenuring', '--no-allocation-site-pretenuring', '--allocation_site_pretenuring'];
  for (const f of [...spellings, '--no_allocation_site_pretenuring', '--allocation-site-pretenuring=false']) {
    t.ok(namesV8Flag('allocation-site-pretenuring', ['--enable-source-maps', f]), f);
  }
  for (const f of ['--trace-pretenuring', '--no-pretenuring', '--expose-gc', '--allocation-site-pretenuring-x']) t.notOk(namesV8Flag('allocation-site-pretenuring', [f]), f);
});

t.test("the gateway's build() turns it off (the built app, the store on a closed port: no engine loaded)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pretenuring-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = `
    const { build } = await import(${JSON.stringify(join(DIST, 'app.js'))});
    const { parseConfig } = await import(${JSON.stringify(join(DIST, 'config/load.js'))});
    const config = parseConfig({ server: { host: '127.0.0.1', port: 0 }, storage: { data_dir: ${JSON.stringify(dir)}, clickhouse_url: 'http://127.0.0.1:1' } }, {}, '(test)');
    const app = await build({ config, logger: false });
    console.log('built');${WORKLOAD}
    await app.close();
    console.log(JSON.stringify({ kept: keep.length }));`;
  const r = spawnSync(process.execPath, ['--max-semi-space-size=1', '--trace-pretenuring-statistics', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /\{"kept":400000\}/);
  // Loading the modules before build() may tenure sites of its own (the young generation is 1 MiB here): counted from build() on.
  t.ok(r.stdout.includes('built\n'));
  t.equal(tenures(r.stdout.slice(r.stdout.indexOf('built\n'))), 0);
});
