// Checks on a config file's text that the schema cannot make: a key twice in one mapping (yaml's own check compares
// each key with every earlier one, quadratic in a mapping's keys: a file of many keys took seconds, on the event
// loop at a reload), and messages that would print a value taken from an environment variable.

import { Parser, Scalar, isScalar, parseDocument, visit, type Document, type Node, type ScalarTag } from 'yaml';

/**
 * yaml's parse options with its own duplicate-key check off: every parse of a config file's text uses them, and a
 * parse that may meet a file not yet checked looks for duplicates with `duplicateKeys`.
 */
export const KEYS_UNCHECKED = { uniqueKeys: false } as const;

/**
 * A key twice in one mapping, as yaml reports it (its message, at the second key): one set a mapping. Twice is the
 * same value (`1:` and `1.0:`), or the same key as the load reads it (`"2024":` and `2024:`, both the provider "2024":
 * the load would keep the later, and an edit could not tell which one it is to change).
 */
export function duplicateKeys(doc: Document): { pos: number; message: string }[] {
  const found: { pos: number; message: string }[] = [];
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      const loaded = new Set<string>();
      for (const pair of map.items) {
        if (!isScalar(pair.key) && pair.key !== null) continue; // a complex key: not compared, as before
        const key = isScalar(pair.key) ? pair.key.value : null;
        const read = loadedKey(pair.key);
        if (seen.has(key) || (read !== undefined && loaded.has(read))) found.push({ pos: isScalar(pair.key) ? (pair.key.range?.[0] ?? 0) : 0, message: 'Map keys must be unique' });
        seen.add(key);
        if (read !== undefined) loaded.add(read);
      }
    },
  });
  return found;
}

/**
 * Numbers YAML reads differently from how they are written (`12345678901234567890` loses its last digits, `0x1f2e`
 * becomes 7982, `007` 7, `1.0` 1, `1e3` 1000) are put back as the text written, in place in `doc`. A string field (a
 * gateway key, a provider secret, a name) then holds exactly what its line says, not a number's digits; a number field
 * reads the same number as before, the config's validator turning the text into it (as for a `${VAR}` value).
 */
export function numbersAsWritten(doc: Document): void {
  visit(doc, {
    Scalar(_, s) {
      if ((typeof s.value === 'number' || typeof s.value === 'bigint') && typeof s.source === 'string' && s.source !== String(s.value)) s.value = s.source;
    },
  });
}

/**
 * A mapping key as the load reads it (numbersAsWritten, then yaml's toJS): `2024:` is "2024", `1.0:` "1.0", `~:` "",
 * `yes:` under `%YAML 1.1` "true"; undefined for a key that is not a scalar (or a scalar that is not a plain value).
 */
export function loadedKey(key: unknown): string | undefined {
  if (key === null) return ''; // `: value`, a key left empty
  if (!isScalar(key)) return undefined;
  const v = key.value;
  if ((typeof v === 'number' || typeof v === 'bigint') && typeof key.source === 'string' && key.source !== String(v)) return key.source;
  if (v === null) return '';
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? String(v) : undefined;
}

/**
 * A number's text as the file wrote it, written back unchanged by a file rewritten for an edit (AS_WRITTEN); for an
 * explicitly tagged value, its tag's text too, and `tag` the tag it resolved to (for its %TAG directive).
 */
class AsWritten {
  constructor(
    readonly text: string,
    readonly tag?: string,
  ) {}
}

/** Writes an AsWritten as its text, plain and untagged (`default`); never resolves anything (no `test`). */
const AS_WRITTEN: ScalarTag = {
  tag: 'tag:tollgate.dev,2026:as-written',
  default: true,
  identify: (v) => v instanceof AsWritten,
  resolve: (s) => s,
  stringify: ({ value }) => (value as AsWritten).text,
};

/** Where each explicit tag of `text` (`!!int`, `!<tag:yaml.org,2002:int>`, `!local`) starts, by where it ends. */
function tagStarts(text: string): Map<number, number> {
  const starts = new Map<number, number>();
  const walk = (token: unknown): void => {
    if (Array.isArray(token)) return token.forEach(walk);
    if (token === null || typeof token !== 'object') return;
    const { type, offset, source } = token as { type?: unknown; offset?: unknown; source?: unknown };
    if (type === 'tag' && typeof offset === 'number' && typeof source === 'string') starts.set(offset + source.length, offset);
    else Object.values(token).forEach(walk);
  };
  for (const token of new Parser().parse(text)) walk(token);
  return starts;
}

const FLOW_SCALAR = new Set<Scalar['type']>([Scalar.PLAIN, Scalar.QUOTE_DOUBLE, Scalar.QUOTE_SINGLE]);

/**
 * The text of an explicitly tagged scalar on one line, from its tag to the end of its value (`!!int 0070`,
 * `!<tag:yaml.org,2002:float> "1.50"`, `!!str 0070`), when only spaces part the two; undefined otherwise (a block
 * scalar, an anchor or a comment between them: written as yaml writes it).
 */
function taggedText(text: string, s: Scalar, tags: ReadonlyMap<number, number>): string | undefined {
  if (s.range === undefined || s.range === null || !FLOW_SCALAR.has(s.type)) return undefined;
  const [start, end] = s.range;
  const value = text.slice(start, end);
  const spaces = /[ \t]+$/.exec(text.slice(0, start))?.[0].length ?? 0;
  const tagStart = spaces > 0 ? tags.get(start - spaces) : undefined;
  return tagStart === undefined || /[\r\n]/.test(value) ? undefined : text.slice(tagStart, end);
}

/**
 * `text` parsed to be edited and written again (a settings edit that changes the structure, an alias made its own,
 * `tollgate providers add`): yaml writes a number it parsed from its value (`12345678901234567890` as
 * `12345678901234567000`, `0070` as `70`, `1e4` as `1e+4`) and an explicitly tagged value from its tag and value
 * (`!!int 0070` as `!!int 70`, `!!str 0070` as `!!str "0070"`), so every number value, and every tagged one with its
 * tag, keeps the text the file wrote instead, written back byte for byte; a mapping key written as such a number
 * becomes its text (quoted when written), as the load reads it (numbersAsWritten). Values an edit sets are new nodes,
 * written as yaml writes them.
 */
export function parseForRewrite(text: string): Document {
  const doc = parseDocument(text, { ...KEYS_UNCHECKED, customTags: [AS_WRITTEN] });
  let tags: Map<number, number> | undefined; // read only for a file that has a tagged value
  visit(doc, {
    Scalar(key, s) {
      if (key !== 'key' && s.tag !== undefined) {
        const written = taggedText(text, s, (tags ??= tagStarts(text)));
        if (written === undefined) return;
        s.value = new AsWritten(written, s.tag);
        delete s.tag; // the text carries it (and keepTagDirectives the %TAG line it uses)
        return;
      }
      if (typeof s.value !== 'number' || typeof s.source !== 'string' || s.tag !== undefined) return;
      if (key !== 'key') s.value = new AsWritten(s.source);
      else if (s.source !== String(s.value)) s.value = s.source;
    },
  });
  if (tags !== undefined) keepTagDirectives(doc);
  return doc;
}

/**
 * yaml writes a `%TAG` directive only when a node of the document still has a tag under its prefix; a tagged value
 * written back as its text (parseForRewrite) has none, so `%TAG !y! tag:yaml.org,2002:` would be dropped and the
 * `!y!float 1e1` it resolves fail to load, or `%TAG ! tag:yaml.org,2002:` and `!int 0070` read as the string "0070".
 * The document's directives count the tags of those values too (the ones still in it when the document is written),
 * so every directive a written line uses is written, in the file's order.
 */
function keepTagDirectives(doc: Document): void {
  const directives = doc.directives;
  if (directives === undefined) return;
  const written = directives.toString.bind(directives);
  directives.toString = (of) => {
    const lines = written(of).split('\n');
    const kept = new Set<string>();
    if (of !== undefined) {
      visit(of.contents as Node | null, {
        Scalar(_, s) {
          if (s.value instanceof AsWritten && s.value.tag !== undefined) kept.add(s.value.tag);
        },
      });
    }
    const used = (handle: string, prefix: string): boolean =>
      !(handle === '!!' && prefix === 'tag:yaml.org,2002:') && [...kept].some((tag) => tag.startsWith(prefix));
    // yaml's own lines (a %YAML line, the %TAG lines its nodes use) and those of the values kept, in the file's order
    const tagLines = Object.entries(directives.tags)
      .map(([handle, prefix]) => ({ line: `%TAG ${handle} ${prefix}`, handle, prefix }))
      .filter(({ line, handle, prefix }) => lines.includes(line) || used(handle, prefix))
      .map(({ line }) => line);
    return [...lines.filter((line) => line !== '' && !line.startsWith('%TAG ')), ...tagLines].join('\n');
  };
}

/**
 * An issue whose message quotes a value that came from an environment variable names the variable instead: a
 * variable may hold a secret, and a mistaken reference (a key's variable as a time zone) must not print it.
 */
export function unquoted<I extends { readonly message: string }>(issue: I, substituted: ReadonlyMap<string, string>): I {
  let message = issue.message;
  for (const [value, name] of substituted) {
    if (value.length < 4) continue;
    // the value, or the longest start of it a message quotes (messages shorten long values: `value.slice(0, 64)`)
    for (let n = value.length; n >= Math.min(8, value.length); n--) {
      const part = value.slice(0, n);
      if (message.includes(part)) {
        message = message.split(part).join(`\${${name}}`);
        break;
      }
    }
  }
  return message === issue.message ? issue : { ...issue, message };
}
