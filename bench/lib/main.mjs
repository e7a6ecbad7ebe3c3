// How every benchmark script ends: the exit code main() returns (1 when it throws), the script's own cleanup
// (children, temporary directories, the watchdog) on every path, then an explicit exit so a stray handle cannot keep
// the process alive.

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
