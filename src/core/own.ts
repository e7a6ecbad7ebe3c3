// Lookups in records keyed by client input (a model's provider prefix, a content part's `type`, a file extension)
// read own properties only: `cfg.providers['__proto__']` or `TABLE['constructor']` must be "not there", never
// Object.prototype or a function inherited from it.

/** `record[key]` when `key` is an own property of `record`, else undefined. */
export function own<V>(record: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
