// V8's allocation-site pretenuring, turned off for the gateway's process (docs/benchmarks.md, "Pretenuring: what kept
// finished requests alive"). V8 watches each object literal's allocation site and, once a scavenge at the young
// generation's full size finds 85 % of a site's objects still alive, allocates that site's objects in the old
// generation from then on. A gateway's request objects live a few milliseconds, but an object made in the old
// generation keeps every young object it points to (the Fastify request and reply, the parsed body, the answer) alive
// through each scavenge until the next full collection, so those are copied and then promoted too, and their sites
// pass the 85 % in turn: under load almost everything a request allocates ended in the old generation (promoted a
// scavenge: 902 KB on, 372 KB off; CPU a request about 7 % less, two builds at once). An operator who names the flag on
// node's command line (either way round: `--allocation-site-pretenuring` turns it back on) keeps their choice; Node
// does not take it in NODE_OPTIONS.

import { setFlagsFromString } from 'node:v8';
import { namesV8Flag } from './v8-flags.js';

const FLAG = 'allocation-site-pretenuring';

let applied = false;

/** Turn V8's allocation-site pretenuring off for this process, once, unless node's flags name it. True when it did. */
export function stopPretenuring(execArgv: readonly string[] = process.execArgv): boolean {
  if (applied) return false;
  applied = true;
  if (namesV8Flag(FLAG, execArgv)) return false;
  setFlagsFromString(`--no-${FLAG}`);
  return true;
}
