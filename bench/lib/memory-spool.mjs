// A spool that keeps rows in memory: the benchmark's yardstick for what the disk spool (src/store/spool.ts) costs on
// the request path. Same interface as the disk spool (SpoolPort), same segments and deduplication tokens, no file, no
// write(2), no fsync, no begin markers; rows do not survive the process. Never used outside bench/.

import { rowLine } from '../../dist/store/segment.js';
import { Leftovers } from '../../dist/store/leftovers.js';

export class MemorySpool {
  #columns;
  #open = [];
  #openAt = 0;
  #sealed = [];
  #seq = 0;

  /** `columns`: the disk spool's (its options' `columns`): a row's values in that order are its line. */
  constructor(columns) {
    this.#columns = columns;
  }

  /** No earlier process's segments (none is ever left in memory): the disk spool's own reader, given none. */
  leftovers = new Leftovers([], { idOf: () => '', stopped: () => false }, () => undefined);

  get rows() {
    return this.#sealed.reduce((n, s) => n + s.list.length, 0) + this.#open.length;
  }

  get bytes() {
    return 0;
  }

  get oldest() {
    return this.#sealed[0]?.createdAt ?? (this.#open.length > 0 ? this.#openAt : null);
  }

  get openRows() {
    return this.#open.length;
  }

  get inFlight() {
    return 0;
  }

  get failure() {
    return null;
  }

  append(row) {
    if (this.#open.length === 0) this.#openAt = Date.now();
    this.#open.push(row);
    return true;
  }

  begin() {}

  seal() {
    if (this.#open.length > 0) {
      const list = this.#open;
      this.#sealed.push({ name: `mem-${process.pid}-${++this.#seq}-${this.#openAt}`, path: '', rows: list.length, bytes: 0, createdAt: this.#openAt, list });
      this.#open = [];
    }
    return this.#sealed;
  }

  /** The rows as lines in the columns (what the disk spool's file holds): serialised here, at the insert. */
  readLines(seg) {
    const columns = this.#columns;
    return { columns, lines: seg.list.map((row) => rowLine(columns, row)) };
  }

  remove(seg) {
    const i = this.#sealed.indexOf(seg);
    if (i !== -1) this.#sealed.splice(i, 1);
  }

  reject() {}

  close() {}
}
