// A temporary directory per test file, removed at teardown. chdb binds one data directory per process, and tap
// runs each test file in its own process, so a file's store lives in the directory this returns.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export function tempDir(t: Teardown, prefix = 'tollgate-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
