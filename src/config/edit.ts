// Edits of the config file made by the settings API, with the `yaml` package so that comments, key order, flow style
// and `${VAR}` references survive: a value that replaces a scalar is written into that scalar's source token (the
// CST), so every other byte of the file stays as it was; a key added or removed, or a list replaced, goes through
// the Document API (which also keeps comments, though it may re-space them). The result is validated by the same
// loader as a file read at start (parseConfigText) before a byte is written, and written whole (a temp file renamed
// over it; a symlink's target, in the target's directory), so a reader never sees half a file. The file's ETag is
// the SHA-256 of its bytes. A file that cannot be read, is not clean YAML (a syntax error, a duplicate key, more
// aliases than the loader expands) or cannot be written is a ConfigFileError: nothing is written. An edit that goes
// through a YAML alias (or changes a node that aliases name) first gives each entry its own copy of the shared value,
// so that it changes the one entry it is for. An edit's path names keys as the load reads them (strings: `2024:` is
// "2024"), and is matched against the file's own keys before it is applied (keysIn). An edit works on the text with LF
// line ends and writes its result with the file's own (CRLF or LF) and byte order mark (line-ends.ts).

import { createHash, randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, fchmodSync, fchownSync, openSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import {
  CST, Composer, LineCounter, Parser, isAlias, isCollection, isMap, isNode, isScalar, isSeq, parseDocument, visit, type Document, type Node,
} from 'yaml';
import { parseConfigText, type ConfigIssue } from './load.js';
import { inTextForm, plainText, textFormOf } from './line-ends.js';
import { rootWriteProblem } from './root-write.js';
import { KEYS_UNCHECKED, duplicateKeys, loadedKey, parseForRewrite } from './text-checks.js';
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

/** The config file on disk cannot be edited as it is (the message says why); it is left as it was. */
export class ConfigFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigFileError';
  }
}

export function readConfigFile(file: string): ConfigFileState {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`it cannot be read (${(err as Error).message})`);
  }
  return { text, etag: etagOf(text) };
}

/** Why `text` cannot be edited (not clean YAML, not a mapping, too many aliases to expand), or null. */
export function editProblem(text: string): string | null {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter: lines, ...KEYS_UNCHECKED });
  const err = doc.errors[0] ?? duplicateKeys(doc).map((d) => ({ pos: [d.pos], message: d.message }))[0];
  if (err !== undefined) return `line ${lines.linePos(err.pos[0]).line}: YAML syntax: ${err.message.split('\n')[0]}`;
  if (!isMap(doc.contents)) return 'it is not a YAML mapping';
  try {
    doc.toJS();
  } catch (e) {
    return `YAML: ${(e as Error).message.split('\n')[0]}`;
  }
  return null;
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
        const key = loadedKey(pair.key) ?? String(pair.key);
        walk(pair.value, path === '' ? key : `${path}.${key}`);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, `${path}[${i}]`));
    }
  };
  walk(parseDocument(text, KEYS_UNCHECKED).contents, '');
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

/**
 * `path` as the keys `doc` has for it: a segment is the key of the mapping there whose loaded form (loadedKey) it is,
 * so that `providers.2024` finds `2024:` (an integer key, read by the load as "2024") and `models.3.5` finds `3.5:`,
 * rather than a string key '2024' made beside them. A key written as that string is taken first; a segment no key
 * matches (and every one after it) stays as given: a new string key. Aliases on the way are followed.
 */
function keysIn(doc: Document, path: SettingPath): readonly unknown[] {
  const keys: unknown[] = [];
  let node: unknown = doc.contents;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    const pair = isMap(node)
      ? (node.items.find((p) => isScalar(p.key) && p.key.value === segment) ?? node.items.find((p) => loadedKey(p.key) === String(segment)))
      : undefined;
    if (pair !== undefined) {
      keys.push(isScalar(pair.key) ? pair.key.value : pair.key);
      node = pair.value;
    } else {
      keys.push(segment);
      node = isSeq(node) && typeof segment === 'number' ? node.items[segment] : undefined;
    }
  }
  return keys;
}

/** `text` with the scalar at `path` replaced by `value` in its source token, or null when that is not the case. */
function replaceScalar(text: string, path: SettingPath, value: unknown): string | null {
  if (value === undefined || (value !== null && typeof value === 'object')) return null;
  const tokens = [...new Parser().parse(text)];
  const [doc] = [...new Composer({ keepSourceTokens: true, ...KEYS_UNCHECKED }).compose(tokens)];
  const node = doc?.getIn(keysIn(doc, path), true);
  if (!isScalar(node) || node.srcToken === undefined || doc!.errors.length > 0) return null;
  if (typeof value === 'string') CST.setScalarValue(node.srcToken, value);
  else CST.setScalarValue(node.srcToken, value === null ? 'null' : String(value), { type: 'PLAIN' });
  return tokens.map((tok) => CST.stringify(tok)).join('');
}

/**
 * A copy of `node` for the alias `alias`, defining no anchor (a second definition would take over the aliases that
 * follow it), with the alias's own comments, not the anchored node's (written once, where they are).
 */
function ownCopy(node: Node, alias: Node): Node {
  const copy = node.clone() as Node;
  visit(copy, { Node: (_k, n) => void delete (n as { anchor?: string }).anchor });
  copy.comment = alias.comment;
  copy.commentBefore = alias.commentBefore;
  return copy;
}

/**
 * `text` with every node an edit goes through made the edited entry's own: an alias on the way is replaced by a copy
 * of the node it names, and an anchored node that aliases name is copied into each of them (its anchor dropped).
 * Every entry keeps its value; `text` is returned as it is when no edit meets an alias or a shared anchor.
 */
function unshare(text: string, edits: readonly SettingEdit[]): string {
  const doc: Document = parseForRewrite(text); // written again below: every number keeps its text
  let changed = false;
  const spread = (target: Node): void => {
    const anchor = target.anchor;
    if (anchor === undefined) return;
    let used = false;
    visit(doc, { Alias: (_k, a) => (a.source === anchor && a.resolve(doc) === target ? ((used = true), ownCopy(target, a)) : undefined) });
    if (used) delete (target as { anchor?: string }).anchor;
    changed ||= used;
  };
  for (const e of edits) {
    const path = keysIn(doc, e.path);
    let node: unknown = doc.contents;
    for (let i = 0; isNode(node); i++) {
      if (isAlias(node)) {
        const source = node.resolve(doc);
        if (source === undefined || i === 0) break;
        node = ownCopy(source, node);
        (doc.getIn(path.slice(0, i - 1), true) as { set(k: unknown, v: unknown): void }).set(path[i - 1], node);
        changed = true;
      }
      spread(node as Node);
      if (i === path.length || !isCollection(node)) break;
      node = node.get(path[i], true);
    }
  }
  return changed ? doc.toString() : text;
}

/** The pairs of the map that holds the key `at[n - 1]` (the file's own key: keysIn), and its index there (-1: none). */
function keyAt(doc: Document, at: readonly unknown[], n: number): { items: readonly { key: unknown }[]; i: number } {
  const holder = n === 1 ? doc.contents : (doc.getIn(at.slice(0, n - 1), true) as unknown);
  const items = isMap(holder) ? holder.items : [];
  return { items, i: items.findIndex((p) => isScalar(p.key) && p.key.value === at[n - 1]) };
}

/**
 * A new map for the key at `at`, in place of its empty value `there` (null when the key is not there). yaml gives an
 * empty value every comment after it, up to the next key, whatever its indentation: the note on the key's line and the
 * comment lines indented under the key (its keys commented out) are the map's, written under the key before its
 * first key; the lines from the first one not indented under it on (the next section's heading, a note at the end of
 * the file) stay where they were, before the next key (or at the end).
 */
function mapInPlaceOf(doc: Document, text: string, at: readonly unknown[], there: Node | null): Node {
  const map = doc.createNode({});
  const range = there?.range;
  if (there === null || range === undefined || range === null) return map;
  const lineStart = (i: number) => text.lastIndexOf('\n', i - 1) + 1;
  const own = keyAt(doc, at, at.length);
  const key = own.i === -1 ? undefined : (own.items[own.i]!.key as Node);
  const keyIndent = key?.range === undefined || key.range === null ? 0 : key.range[0] - lineStart(key.range[0]);
  const inside: string[] = [];
  const after: string[] = [];
  const lines = text.slice(range[0], range[2]).split('\n');
  lines.forEach((line, i) => {
    const hash = line.indexOf('#');
    if (hash === -1) return;
    const indent = line.length - line.trimStart().length;
    const mine = after.length === 0 && (i === 0 || indent > keyIndent); // the key's own line, or indented under it
    (mine ? inside : after).push(line.slice(hash + 1).trimEnd());
  });
  if (inside.length > 0) map.commentBefore = inside.join('\n');
  if (after.length > 0) {
    // Before the next key after this one: in its own map, else in the nearest enclosing map with a key after the
    // branch this one is in; none: at the end of the file.
    const joined = (c: string | null | undefined) => [...after, ...(c === undefined || c === null ? [] : [c])].join('\n');
    let next: Node | undefined;
    for (let up = at.length; up >= 1 && next === undefined; up--) {
      const { items, i } = up === at.length ? own : keyAt(doc, at, up);
      if (i !== -1 && i + 1 < items.length) next = items[i + 1]!.key as Node;
    }
    if (next !== undefined) next.commentBefore = joined(next.commentBefore);
    else doc.comment = joined(doc.comment);
  }
  return map;
}

/** An edit's path runs through a value that is not a mapping (`budgets: 5`): the file must be fixed by hand. */
export class EditPathError extends Error {}

/**
 * `text` with `edits` applied; a map left empty by a removal is removed too (no `budgets: {}` litter). The result has
 * the file's line ends and byte order mark (line-ends.ts), whatever the edit. Throws EditPathError when a path runs
 * through a value that is not a mapping.
 */
export function applyEdits(text: string, edits: readonly SettingEdit[]): string {
  return inTextForm(editedText(plainText(text), edits), textFormOf(text));
}

function editedText(text: string, edits: readonly SettingEdit[]): string {
  text = unshare(text, edits);
  const structural: SettingEdit[] = [];
  const present = parseDocument(text, KEYS_UNCHECKED);
  for (const e of edits) {
    if (e.value === undefined && !present.hasIn(keysIn(present, e.path))) continue; // removing what is not there
    const replaced = replaceScalar(text, e.path, e.value);
    if (replaced === null) structural.push(e);
    else text = replaced;
  }
  if (structural.length === 0) return text;
  const doc = parseForRewrite(text); // every untouched value is written again: its numbers keep their text
  for (const e of structural) {
    // The file's own keys (keysIn): each parse reads a key as its own value (`1.0:` is 1 here, "1.0" in doc).
    const path = keysIn(doc, e.path);
    const presentPath = keysIn(present, e.path);
    if (e.value === undefined) {
      if (!doc.hasIn(path)) continue;
      doc.deleteIn(path);
      for (let n = path.length - 1; n > 0; n--) {
        const parent = doc.getIn(path.slice(0, n), true) as Node | undefined;
        if (!isMap(parent) || parent.items.length > 0) break;
        doc.deleteIn(path.slice(0, n));
      }
    } else {
      // A new node (a list, or a key that was not there) takes over the comments of the one it replaces.
      const existing = doc.getIn(path, true) as Node | undefined;
      const node = doc.createNode(e.value, { flow: typeof e.value === 'object' });
      if (existing !== undefined && existing !== null) {
        node.comment = existing.comment;
        node.commentBefore = existing.commentBefore;
      }
      // The maps on the way, made here as plain maps: setIn would make them from a JS Map, which a `%YAML 1.1` file's
      // schema writes as `!!omap` (a list of pairs the config's schema refuses). A key with nothing under it
      // (`budgets:` whose keys are all commented out) is such a map to be; any other value there is not a map.
      // A null written with a tag (`!!null ~`) is kept as written by parseForRewrite: the plain parse says it is null.
      for (let n = 1; n < path.length; n++) {
        const at = path.slice(0, n);
        const there = doc.getIn(at, true) as Node | null | undefined;
        if (there === undefined || there === null || (isScalar(there) && (there.value === null || present.getIn(presentPath.slice(0, n)) === null))) {
          doc.setIn(at, mapInPlaceOf(doc, text, at, there ?? null));
        } else if (!isMap(there)) throw new EditPathError(`${e.path.slice(0, n).join('.')} is not a mapping, so ${e.path.join('.')} cannot be set under it`);
      }
      doc.setIn(path, node);
    }
  }
  return doc.toString();
}

export interface WriteResult {
  readonly config: Config;
  readonly etag: string;
}

/**
 * Validate `text` as the config file would be validated at start (and by `refuse`, issues of the running gateway's:
 * a ConfigFileError), then write it to `file` (replaceFileText). Throws the ConfigError (nothing written) when it is
 * invalid, a ConfigFileError when the file cannot be written.
 */
export function writeConfigFile(file: string, text: string, opts: { env?: Readonly<Record<string, string | undefined>>; refuse?: (c: Config) => readonly ConfigIssue[] } = {}): WriteResult {
  const config = parseConfigText(text, opts.env ?? process.env, file);
  const refused = opts.refuse?.(config)[0];
  if (refused !== undefined) throw new ConfigFileError(`${refused.path}: ${refused.message}`);
  replaceFileText(file, text);
  return { config, etag: etagOf(text) };
}

/**
 * Replace `file`'s text as an editor's save does: a temporary file beside the file (beside a symlink's target: the
 * link stays), renamed over it. The temporary file has a random name and is created exclusively, its mode and owner
 * set on the open file: a link planted at a predictable name (the pid's) was followed, and as root the write handed
 * the link's target to the directory's owner. The file's mode is kept exactly (the umask does not narrow it), and its
 * owner and group where the process may set them (a gateway run as root leaves the operator's file the operator's).
 * A file this process may not write, or that nobody may (root could), is refused rather than replaced through the
 * directory. Throws a ConfigFileError, with nothing changed, when it cannot be written.
 */
export function replaceFileText(file: string, text: string): void {
  let temp: string | null = null;
  try {
    // Run as root: only where no other user can steer the write (config/root-write.ts).
    const steered = process.getuid?.() === 0 ? rootWriteProblem(file) : null;
    if (steered !== null) throw new Error(`the gateway runs as root and ${steered}: make it root's, or run the gateway as the file's owner`);
    const target = realpathSync(file);
    const st = statSync(target);
    const mode = st.mode & 0o777;
    if ((mode & 0o222) === 0) throw new Error(`it is read-only (mode 0${mode.toString(8)}): make it writable to change it here`);
    try {
      accessSync(target, constants.W_OK);
    } catch {
      throw new Error(`the gateway's user (uid ${process.getuid?.() ?? '?'}) may not write it (mode 0${mode.toString(8)}, owner uid ${st.uid})`);
    }
    const name = join(dirname(target), `.${basename(target)}.${randomBytes(8).toString('hex')}.tmp`);
    const fd = openSync(name, 'wx', 0o600);
    temp = name;
    try {
      writeFileSync(fd, text);
      fchmodSync(fd, mode);
      keepOwner(fd, st.uid, st.gid);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  } catch (err) {
    if (temp !== null) {
      try {
        rmSync(temp, { force: true });
      } catch { /* the error that matters is the write's */ }
    }
    throw new ConfigFileError(`it cannot be written (${(err as Error).message})`);
  }
}

/**
 * Give the open file `fd` this owner and group, where the process may: root sets both; another user only a group it is
 * in (the file then becomes the writer's, as with any editor's save, its group kept).
 */
function keepOwner(fd: number, uid: number, gid: number): void {
  if (uid === process.getuid?.() && gid === process.getgid?.()) return;
  for (const [u, g] of [[uid, gid], [-1, gid]] as const) {
    try {
      fchownSync(fd, u, g);
      return;
    } catch { /* not allowed: try the group alone, then leave it */ }
  }
}
