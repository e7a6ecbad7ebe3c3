// Edits of config.yaml that keep the file as the user wrote it: the `yaml` Document API changes the one node it must
// and leaves every comment, blank line and quoting style elsewhere in place. This module holds the provider edits
// (`tollgate providers add`); the console's settings writer can share the same approach (one module per edit kind).

import { Document, isMap, isScalar, parseDocument, type YAMLMap } from 'yaml';
import { isDeepStrictEqual } from 'node:util';
import { catalogModels, catalogProvider, catalogProviders } from './catalog.js';
import { CATALOG_PACKAGE, CATALOG_VERSION } from './catalog-prices.js';
import { isSourceModel, sourceModel, type SourceModel } from './source-models.js';
import type { ProviderGroup } from './types.js';
import { KEYS_UNCHECKED, duplicateKeys, parseForRewrite } from './text-checks.js';
import { inTextForm, plainText, textFormOf } from './line-ends.js';

export interface AddProviderOptions {
  /** The catalog provider id (`openai`, `anthropic`, `deepseek`, ...). */
  readonly catalogId: string;
  /** The provider prefix in the config (default: the catalog id). */
  readonly prefix?: string;
  /**
   * The models to list (default: every model the catalog has for the provider). A model the catalog lacks that the
   * second price source names for the provider (config/source-models.ts) is taken by its id.
   */
  readonly models?: readonly string[];
  readonly group?: ProviderGroup;
  /** Overrides the catalog's base URL (needed where it has none). */
  readonly baseUrl?: string;
}

export class ConfigEditError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigEditError';
  }
}

const PREFIX = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The provider block for a catalog provider, as plain data (the order is the order written). */
export function providerBlock(o: AddProviderOptions): { prefix: string; block: Record<string, unknown>; models: string[]; fromSources: SourceModel[] } {
  const cp = catalogProvider(o.catalogId);
  if (cp === null) {
    const known = catalogProviders().map((p) => p.id);
    throw new ConfigEditError(`the catalog (${CATALOG_PACKAGE}@${CATALOG_VERSION}) has no provider '${o.catalogId}'; it has: ${known.join(', ')}`);
  }
  if (cp.format === null) throw new ConfigEditError(`catalog provider '${cp.id}' takes an API Tollgate does not speak (not OpenAI, Anthropic or Gemini compatible)`);
  const baseUrl = o.baseUrl ?? cp.baseUrl;
  if (baseUrl === null) throw new ConfigEditError(`the catalog has no base URL for '${cp.id}': give one with --base-url`);
  if (!/^https?:\/\/[^\s]+$/.test(baseUrl)) throw new ConfigEditError(`--base-url must be an http(s) URL`);
  const prefix = o.prefix ?? cp.id;
  if (!PREFIX.test(prefix)) throw new ConfigEditError(`'${prefix}' is not a valid provider prefix ([A-Za-z0-9][A-Za-z0-9._-]*)`);
  const all = catalogModels(cp.id);
  const wanted = o.models ?? all.map((m) => m.id);
  const found = new Map(wanted.map((id) => [id, all.find((m) => m.id === id) ?? sourceModel(cp.id, id)]));
  const unknown = wanted.filter((id) => found.get(id) === null);
  if (unknown.length > 0) throw new ConfigEditError(`the catalog has no model ${unknown.map((u) => `'${u}'`).join(', ')} for '${cp.id}', nor does the second price source; GET /api/catalog?provider=${cp.id} lists them`);
  const models: Record<string, unknown> = {};
  const fromSources: SourceModel[] = [];
  for (const id of wanted) {
    const m = found.get(id)!;
    if (isSourceModel(m) && !fromSources.includes(m)) fromSources.push(m);
    models[id] = {
      ...(m.capabilities.length > 0 ? { capabilities: [...m.capabilities] } : {}),
      ...(m.maxOutputTokens !== null ? { max_output_tokens: m.maxOutputTokens } : {}),
    };
  }
  const env = cp.env[0] ?? `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`;
  return {
    prefix,
    models: [...new Set(wanted)],
    fromSources,
    block: {
      name: cp.name,
      group: o.group ?? 'paid',
      format: cp.format,
      base_url: baseUrl,
      auth: { type: 'api_key', key: `\${${env}}` },
      ...(prefix !== cp.id ? { catalog: cp.id } : {}),
      models,
    },
  };
}

function providersMap(doc: Document): YAMLMap {
  if (doc.contents === null) doc.contents = doc.createNode({}) as never;
  if (!isMap(doc.contents)) throw new ConfigEditError('the config file is not a YAML mapping');
  let providers = doc.get('providers', true);
  if (providers === undefined || providers === null || (isScalar(providers) && providers.value === null)) {
    doc.set('providers', doc.createNode({}));
    providers = doc.get('providers', true);
  }
  if (!isMap(providers)) throw new ConfigEditError('`providers` in the config file is not a mapping');
  if (providers.items.length === 0) providers.flow = false;
  return providers;
}

/**
 * `text` with a provider block for a catalog provider added under `providers:`; everything else is kept as it was,
 * the file's line ends (the new lines' too) and byte order mark included (line-ends.ts).
 */
export function addProvider(text: string, o: AddProviderOptions): { text: string; prefix: string; models: string[] } {
  const added = providerAdded(plainText(text), o);
  return { ...added, text: inTextForm(added.text, textFormOf(text)) };
}

function providerAdded(text: string, o: AddProviderOptions): { text: string; prefix: string; models: string[] } {
  const doc = parseForRewrite(text); // the file is written again: its numbers keep their text
  const err = doc.errors[0] ?? duplicateKeys(doc)[0];
  if (err !== undefined) throw new ConfigEditError(`the config file is not valid YAML: ${err.message.split('\n')[0]}`);
  const { prefix, block, models, fromSources } = providerBlock(o);
  const providers = providersMap(doc);
  if (providers.has(prefix)) throw new ConfigEditError(`provider '${prefix}' is already configured; pick another prefix with --as`);
  const node = doc.createNode(block) as YAMLMap;
  // Short maps on one line, as the shipped config writes them.
  const auth: unknown = node.get('auth', true);
  if (isMap(auth)) auth.flow = true;
  const modelsNode: unknown = node.get('models', true);
  if (isMap(modelsNode)) for (const item of modelsNode.items) if (isMap(item.value)) item.value.flow = true;
  const pair = doc.createPair(prefix, node);
  if (isScalar(pair.key)) pair.key.commentBefore = ` Added by \`tollgate providers add ${o.catalogId}\` from ${CATALOG_PACKAGE}@${CATALOG_VERSION}${sourcesNote(fromSources)}; prices come from the catalog unless set here`;
  const spliced = insertedAfterLast(text, providers, pair);
  if (spliced !== null && readsAsAdded(text, spliced, { prefix, block })) return { text: spliced, prefix, models };
  providers.items.push(pair);
  return { text: doc.toString(), prefix, models };
}

/** Which models of the block the catalog lacks, and where their price and limit come from (`` for none). */
function sourcesNote(fromSources: readonly SourceModel[]): string {
  if (fromSources.length === 0) return '';
  const sources = [...new Set(fromSources.flatMap((m) => [m.priceSource, ...(m.limitsSource === null ? [] : [m.limitsSource])]))];
  return ` (${fromSources.map((m) => m.id).join(', ')}: ${sources.join(', ')})`;
}

/** Does `spliced` read as `text` with `block` added under `providers.<prefix>`, and nothing else changed? */
function readsAsAdded(text: string, spliced: string, added: { prefix: string; block: unknown }): boolean {
  const after = parseDocument(spliced, KEYS_UNCHECKED).toJS() as { providers?: Record<string, unknown> };
  if (!isDeepStrictEqual(after.providers?.[added.prefix], added.block)) return false;
  delete after.providers![added.prefix];
  return isDeepStrictEqual(after, parseDocument(text, KEYS_UNCHECKED).toJS());
}

/**
 * `text` with `pair` written after the last provider of a block `providers:` mapping, as text: every other byte of the
 * file stays as it was (writing the whole document again moved the file's closing comments under `providers:`, and
 * respaced `[tools]` and end-of-line comments). Null when the mapping is not such a block (then the document is
 * written again), or its last entry's end is not known.
 */
function insertedAfterLast(text: string, providers: YAMLMap, pair: ReturnType<Document['createPair']>): string | null {
  const first = providers.items[0]?.key;
  const last = providers.items.at(-1)?.value as { range?: [number, number, number] } | null | undefined;
  if (providers.flow === true || !isScalar(first) || first.range == null || last?.range == null) return null;
  const indent = first.range[0] - (text.lastIndexOf('\n', first.range[0] - 1) + 1);
  const lineEnd = text.indexOf('\n', last.range[1] - 1);
  const at = lineEnd === -1 ? text.length : lineEnd + 1;
  const one = new Document();
  one.contents = one.createNode({}) as never;
  (one.contents as unknown as YAMLMap).items.push(pair);
  const lines = one.toString().replace(/\n$/, '').split('\n').map((l) => (l === '' ? l : ' '.repeat(indent) + l));
  return `${text.slice(0, at)}${lineEnd === -1 ? '\n' : ''}${lines.join('\n')}\n${text.slice(at)}`;
}
