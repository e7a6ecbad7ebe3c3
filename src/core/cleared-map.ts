// A Map for entries that come and go at a request's pace (the requests in flight), written so that what an entry held
// dies young once the entry is gone. V8 gives a Map a new hash table as entries are added and deleted, and the table it
// replaced (in the old generation, the Map being long-lived) still points at the values it held until the next full
// collection: every scavenge until then takes those values, and all they reach (a request's body, its answer, its
// response), for live and promotes them. A bare passthrough promotes 0.3 KB a request; the gateway, with three such maps
// of its requests in flight, promoted 8-10 KB (docs/benchmarks.md, "Two days of exactness on the request path").
// Here each value sits in a small box emptied when its entry is deleted: a replaced table keeps only empty boxes.

interface Box<V> {
  v: V | undefined;
}

export class ClearedMap<K, V> {
  readonly #boxes = new Map<K, Box<V>>();

  get size(): number {
    return this.#boxes.size;
  }

  set(key: K, value: V): this {
    const box = this.#boxes.get(key);
    if (box === undefined) this.#boxes.set(key, { v: value });
    else box.v = value;
    return this;
  }

  get(key: K): V | undefined {
    return this.#boxes.get(key)?.v;
  }

  has(key: K): boolean {
    return this.#boxes.has(key);
  }

  delete(key: K): boolean {
    const box = this.#boxes.get(key);
    if (box === undefined) return false;
    box.v = undefined;
    return this.#boxes.delete(key);
  }

  *values(): IterableIterator<V> {
    for (const box of this.#boxes.values()) yield box.v as V;
  }

  *entries(): IterableIterator<[K, V]> {
    for (const [key, box] of this.#boxes) yield [key, box.v as V];
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }
}
