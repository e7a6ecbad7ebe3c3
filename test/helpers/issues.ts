// The issues of the ConfigError that `fn` throws; a test failure when it throws none.

import { ConfigError, type ConfigIssue } from '../../src/config/load.js';

export function issuesOf(t: { fail(msg: string): unknown }, fn: () => unknown): ConfigIssue[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.issues];
    throw err;
  }
  t.fail('expected a ConfigError');
  return [];
}
