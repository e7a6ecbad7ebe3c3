// V8 flags the gateway sets on itself at run time (`v8.setFlagsFromString`): whether node's command line names one
// (the operator's choice, which the gateway then leaves alone), and one set just for the length of a call.

import { setFlagsFromString } from 'node:v8';

/** Whether `argv` (node's flags) names V8's `flag`, either way round (`--no-`), with a value or not; V8 reads `_` as `-`. */
export function namesV8Flag(flag: string, argv: readonly string[] = process.execArgv): boolean {
  return argv.some((f) => f.replace(/_/g, '-').replace(/=.*$/, '').replace(/^--(no-)?/, '') === flag);
}

/** `fn()` with V8's boolean `flag` on, and off again after it, however it ends. */
export function withV8Flag<T>(flag: string, fn: () => T): T {
  setFlagsFromString(`--${flag}`);
  try {
    return fn();
  } finally {
    setFlagsFromString(`--no-${flag}`);
  }
}
