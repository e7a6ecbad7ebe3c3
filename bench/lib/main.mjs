// How every benchmark script starts and ends: a watchdog that ends a run gone wrong, a temporary data directory that
// is removed on every exit path (normal end, error, signal), children killed, and main()'s exit code (1 when it
// throws) followed by an explicit exit so a stray handle cannot keep the process alive.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function guardRun({ log, limitS, killAll }) {
  let dataDir = null;
  const removeDataDir = () => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    dataDir = null;
  };
  const watchdog = setTimeout(() => {
    log(`watchdog: the run took more than ${Math.round(limitS)} s; killing everything`);
    killAll();
    process.exit(3);
  }, limitS * 1000);
  watchdog.unref();
  process.on('exit', removeDataDir);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      log(`${sig}: stopping`);
      killAll();
      removeDataDir();
      process.exit(130);
    });
  }
  return {
    /** A fresh temporary data directory, removed with the run. */
    dataDir(prefix) {
      removeDataDir();
      return (dataDir = mkdtempSync(join(tmpdir(), prefix)));
    },
    removeDataDir,
    cleanup() {
      killAll();
      removeDataDir();
      clearTimeout(watchdog);
    },
  };
}

export function runMain(main, { log, cleanup }) {
  main()
    .then((code) => {
      process.exitCode = code;
    })
    .catch((err) => {
      log(`failed: ${err?.stack ?? err}`);
      process.exitCode = 1;
    })
    .finally(() => {
      cleanup();
      setImmediate(() => process.exit());
    });
}
