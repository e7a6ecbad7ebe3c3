// Edits of the config file made by the settings API: the YAML is changed in place with the `yaml` Document API, so
// comments, key order, flow style and `${VAR}` references survive; the result is validated by the same loader as a
// file read at start (parseConfigText) before a byte is written, and written whole (a temp file renamed over it), so
// a reader never sees half a file. The file's ETag is the SHA-256 of its bytes.

import { createHash } from 'node:crypto';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { parseConfigText } from './load.js';
import type { Config } from './types.js';

export type SettingPath = readonly (string | number)[];

/** Set `path` to `value`; `undefined` removes the key. */
export interface SettingEdit {
  readonly path: SettingPath;
  readonly value: unknown;
}

export interface ConfigFileState {
  readonly text: string;
  /** A strong ETag (quoted). */
  readonly etag: string;
}

export const etagOf = (text: string): string => `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"`;

export function readConfigFile(file: string): ConfigFileState {
  const text = readFileSync(file, 'utf8');
  return { text, etag: etagOf(text) };
}

const ENV_REF = /\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}/;

/** Dotted paths (`budgets.daily_usd`, `providers.demo.price.input`) whose value in `text` holds a `${VAR}` reference. */
export function envFedPaths(text: string): string[] {
  const out: string[] = [];
  const walk = (node: unknown, path: string): void => {
    if (isScalar(node)) {
      if (typeof node.value === 'string' && ENV_REF.test(node.value)) out.push(path);
    } else if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        walk(pair.value, path === '' ? key : `${path}.${key}`);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, `${path}[${i}]`));
    }
  };
  walk(parseDocument(text).contents, '');
  return out;
}

export const dottedPath = (path: SettingPath): string =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

/** Why `edits` may not be written: one of them replaces a `${VAR}` reference (or a value under one). */
export function envConflict(text: string, edits: readonly SettingEdit[]): string | null {
  const fed = envFedPaths(text);
  for (const e of edits) {
    const at = dottedPath(e.path);
    const hit = fed.find((f) => f === at || f.startsWith(`${at}.`) || at.startsWith(`${f}.`));
    if (hit !== undefined) return hit;
  }
  return null;
}

/** `text` with `edits` applied; a map left empty by a removal is removed too (no `budgets: {}` litter). */
export function applyEdits(text: string, edits: readonly SettingEdit[]): string {
  const doc = parseDocument(text);
  for (const e of edits) {
    if (e.value === undefined) {
      if (!doc.hasIn(e.path)) continue;
      doc.deleteIn(e.path);
      for (let n = e.path.length - 1; n > 0; n--) {
        const parent = doc.getIn(e.path.slice(0, n), true) as Node | undefined;
        if (!isMap(parent) || parent.items.length > 0) break;
        doc.deleteIn(e.path.slice(0, n));
      }
    } else {
      const existing = doc.getIn(e.path, true) as Node | undefined;
      // A scalar keeps its node (and so its comment and quoting style); anything else is a new node that takes over
      // the comments of the one it replaces.
      if (isScalar(existing) && (e.value === null || typeof e.value !== 'object')) {
        existing.value = e.value;
        continue;
      }
      const node = doc.createNode(e.value, { flow: typeof e.value === 'object' });
      if (existing !== undefined && existing !== null) {
        node.comment = existing.comment;
        node.commentBefore = existing.commentBefore;
      }
      doc.setIn(e.path, node);
    }
  }
  return doc.toString();
}

export interface WriteResult {
  readonly config: Config;
  readonly etag: string;
}

/**
 * Validate `text` as the config file would be validated at start, then write it to `file` (same mode). Throws the
 * ConfigError (nothing written) when it is invalid.
 */
export function writeConfigFile(file: string, text: string, env: Readonly<Record<string, string | undefined>> = process.env): WriteResult {
  const config = parseConfigText(text, env, file);
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  writeFileSync(temp, text, { mode: statSync(file).mode & 0o777 });
  renameSync(temp, file);
  return { config, etag: etagOf(text) };
}
