// The batch writer (DESIGN.md decision 2). The request path only calls `enqueue`, which never waits: the row goes to
// the spool (src/store/spool.ts), on disk before this event-loop turn ends. Every `flushMs`, or as soon as `maxRows`
// are spooled, the open segment is sealed and the sealed segments are inserted in order, one insert each, with the
// segment's name as the insert deduplication token: a retry or a replay of a segment whose insert did land is dropped
// by ClickHouse, in the table and in every materialized view (not by the embedded engine's views after a restart: the
// oldest segment an earlier process left is settled first, `settleLanded`). A segment is deleted only after its
// insert was acknowledged. While the store fails, the writer retries with capped exponential backoff and jitter,
// forever; rows pile up on disk up to the spool's `maxBytes`, and only past that are new rows dropped and counted.
// `close` makes one attempt at what is spooled, within its bound, and leaves the rest on disk for the next start.

import type { Store } from './client.js';
import { lineId, parseRows, type RowLines, type Segment } from './segment.js';
import type { SpoolPort } from './spool.js';
import { pause, within } from '../core/within.js';
import { isRowError } from './row-errors.js';
import { INSERT_WAIT_MS, settledWithin, type WriteFence } from './write-fence.js';

export interface WriterOptions<Row = Record<string, unknown>> {
  readonly maxRows: number;
  readonly flushMs: number;
  /** The key of a row's id (what `written` reports); `request_id` by default. */
  readonly idKey?: string;
  /** First retry delay (ms); doubles per failure up to `retryMaxMs`, each with up to 50% jitter. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /**
   * Given (the embedded engine, whose views lose a replay's deduplication across a restart), it is asked first about
   * the oldest segment an earlier process left, with its row ids and its row lines: true means every row is in the table
   * already and what the table feeds has been made whole (store/rollup-repair.ts), so the segment is deleted without
   * being inserted again. Not given (a ClickHouse server, which deduplicates a replay in the table and its views
   * alike): every segment is inserted.
   */
  readonly settleLanded?: (ids: readonly string[], rows: RowLines) => Promise<boolean>;
  /**
   * Which of these request ids (the requests an earlier process left in flight, recorded as interrupted) have a row in
   * the store already: given, it is asked before any leftover segment goes in, and those are not recorded as
   * interrupted over their row (Spool.settleRecovered). Not given: every one is recorded.
   */
  readonly storedOf?: (ids: readonly string[], rows: readonly Row[]) => Promise<ReadonlySet<string>>;
}

export type DropReason = 'spool_full' | 'rejected' | 'missing';


export interface WriterEvents {
  /** `n` rows were stored (they are visible to readers from now on): their ids. */
  written(n: number, ids: readonly string[]): void;
  dropped(n: number, reason: DropReason): void;
  /** An insert failed; `attempt` counts the failures of this segment. */
  error(err: unknown, attempt: number): void;
  /** The store stopped (false) or started again (true) accepting inserts: once per change, not once per retry. */
  state(up: boolean, err: unknown): void;
}

export class BatchWriter<Row extends Record<string, unknown>> implements WriteFence {
  readonly #store: Store;
  readonly #table: string;
  readonly #spool: SpoolPort<Row>;
  readonly #opts: Required<Omit<WriterOptions<Row>, 'settleLanded' | 'storedOf'>> & Pick<WriterOptions<Row>, 'settleLanded' | 'storedOf'>;
  readonly #events: WriterEvents;
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> | null = null;
  #closed = false;
  #up = true;
  #lastError: unknown = null;
  #wake: (() => void) | null = null;
  #insertsStarted = 0;
  #insertsEnded = 0;
  #inserting: Promise<void> | null = null;
  /** Reads holding new inserts off (hold): each settles at its release or its time. */
  readonly #holds = new Set<Promise<void>>();
  // The oldest segment an earlier process left (undefined until the first seal lists it; null: none): segments go in
  // in order, each deleted once its insert landed, so it is the only one a process that died in between left landed.
  #leftover: string | null | undefined;
  /** The requests an earlier process left in flight, as interrupted rows, until #settleRecovered appends them (null: not read yet). */
  #recovered: Row[] | null = null;
  // Until #leftover is settled, an insert of unknown outcome (its rows may be in the store and in the list of calls not
  // stored yet at once): begun at construction, ended once settled, so a reader adding that list waits or reads inexact.
  #landing: { readonly done: Promise<void>; readonly end: () => void } | null = null;

  constructor(store: Store, table: string, spool: SpoolPort<Row>, opts: WriterOptions<Row>, events: WriterEvents) {
    this.#store = store;
    this.#table = table;
    this.#spool = spool;
    this.#opts = { retryBaseMs: 100, retryMaxMs: 30_000, idKey: 'request_id', ...opts };
    this.#events = events;
    // Segments an earlier process left go first, once read and the interrupted requests it left are in the open one.
    if (spool.leftovers.counts().segments === 0) return;
    this.#insertsStarted++;
    let end = (): void => undefined;
    const done = new Promise<void>((resolve) => (end = resolve));
    this.#landing = { done, end: () => ((this.#landing = null), this.#insertsEnded++, end()) };
    this.#writing = this.#write();
  }

  get insertsStarted(): number {
    return this.#insertsStarted;
  }

  get insertsEnded(): number {
    return this.#insertsEnded;
  }

  settled(): Promise<void> {
    return this.#landing?.done ?? this.#inserting ?? Promise.resolve();
  }

  async hold(ms = INSERT_WAIT_MS): Promise<() => void> {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2 * ms).unref();
      release = () => (clearTimeout(timer), resolve());
    });
    this.#holds.add(held);
    void held.then(() => this.#holds.delete(held));
    await settledWithin(this, ms);
    return release;
  }

  /** Rows spooled and not yet in the store. */
  get depth(): number {
    return this.#spool.rows;
  }

  /** False from a failed insert until the next one that succeeds. */
  get up(): boolean {
    return this.#up;
  }

  get lastError(): unknown {
    return this.#lastError;
  }

  /** A request began: its snapshot is spooled, so a process that dies before its row exists still records it. */
  begin(id: string, snapshot: () => Row): void {
    if (!this.#closed) this.#spool.begin(id, snapshot);
  }

  /** Hand a row over; returns false (and counts a drop) when the spool is full or the writer is closed. */
  enqueue(row: Row): boolean {
    if (this.#closed || !this.#spool.append(row)) {
      this.#events.dropped(1, 'spool_full');
      return false;
    }
    if (this.#writing === null) this.#schedule();
    // An insert runs (or a failing store is retried): a full batch is sealed all the same, for the loop to take in turn.
    else if (this.#spool.openRows >= this.#opts.maxRows) this.#spool.seal();
    return true;
  }

  /** A full batch goes now; fewer rows wait for the flush timer, so each insert is one large part. */
  #schedule(): void {
    if (this.#closed) return;
    if (this.#spool.openRows >= this.#opts.maxRows) {
      this.#clearTimer();
      this.#writing = this.#write();
    } else if (this.#spool.openRows > 0 && this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        if (this.#writing === null) this.#writing = this.#write();
      }, this.#opts.flushMs).unref();
    }
  }

  #clearTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /**
   * Seal the open segment and insert every sealed one, oldest first. Rows spooled while these inserts run are not
   * sealed here: they wait for their own `flushMs` (or `maxRows`), so under steady load every insert is one large
   * part instead of a train of small ones (each part costs the engine files, a merge and the rollup's view).
   */
  #write(): Promise<void> {
    return (async () => {
      if (this.#recovered === null) { // the first write: what an earlier process left goes first, once read
        if (!(await this.#spool.leftovers.done)) return; // a close's bound ran out while they were read: all stays on disk
        this.#recovered = this.#spool.leftovers.take();
        this.#leftover = this.#spool.leftovers.counts().segments > 0 ? undefined : null;
      }
      if (!(await this.#settleRecovered())) return; // closing with the store down: their markers stay on disk
      // The spool's own list of sealed segments: `remove` takes each one off it once its insert landed.
      const segs = this.#spool.seal();
      if (this.#leftover === undefined) this.#leftover = segs[0]?.name ?? null; // the spool lists an earlier process's first
      if (this.#leftover === null || this.#opts.settleLanded === undefined) this.#landing?.end(); // none to settle
      while (segs.length > 0) {
        if (!(await this.#insert(segs[0]!))) return; // closing with the store down: the rest stays on disk
      }
    })().finally(() => {
      this.#writing = null;
      this.#schedule();
    });
  }

  /**
   * The requests an earlier process left in flight: recorded as interrupted, unless the store holds their row already
   * (storedOf), before any of its segments goes in (they hold the markers). Asked again while the store fails; false
   * when closing with the store down.
   */
  async #settleRecovered(): Promise<boolean> {
    const rows = this.#recovered ?? [];
    if (rows.length === 0) return true;
    const ask = this.#opts.storedOf;
    const idOf = (r: Row) => String(r[this.#opts.idKey] ?? '');
    const ids = rows.map(idOf);
    for (let attempt = 1; ; attempt++) {
      try {
        const stored = ask === undefined ? new Set<string>() : await ask(ids, rows);
        this.#recovered = [];
        // Into the open segment (sealed next, so on disk before the leftover segments holding their markers are
        // inserted and deleted); straight to the spool, since a close may have begun meanwhile (enqueue refuses then).
        for (const row of rows) if (!stored.has(idOf(row)) && !this.#spool.append(row)) this.#events.dropped(1, 'spool_full');
        return true;
      } catch (err) {
        this.#lastError = err;
        this.#events.error(err, attempt);
        this.#setUp(false, err);
        if (this.#closed) return false;
        await this.#sleep(this.#backoff(attempt));
      }
    }
  }

  /** Insert one segment, retrying until it lands (or, once closing, giving up after one more failure). */
  async #insert(seg: Segment): Promise<boolean> {
    // The segment's row lines go as they are (JSONCompactEachRow in their columns; an earlier version's, JSONEachRow),
    // never parsed and serialised again; only when ClickHouse refuses them as data are they parsed, to find the rows
    // it refuses and set them aside (#insertRows). Read inside the attempt: a segment file that cannot be read (EACCES,
    // EIO) is a failed attempt, retried with backoff like a store that fails (and left on disk by a close); one that is
    // gone (ENOENT: deleted behind the spool's back) can never be read again, so it is taken off the list, reported as
    // an error, and the segments after it go on.
    let rows: RowLines | null = null;
    const parsed: { rows: Row[] | null } = { rows: null };
    const ask = seg.name === this.#leftover ? this.#opts.settleLanded : undefined;
    // The row ids when the segment had landed before (and is settled), null when it goes in; undefined: not asked yet.
    let landed: string[] | null | undefined = ask === undefined ? null : undefined;
    for (let attempt = 1; ; attempt++) {
      // A read in progress sees no insert begin; but the unsettled leftover's is under way already (#landing).
      while (this.#holds.size > 0 && landed !== undefined) await Promise.race(this.#holds);
      this.#insertsStarted++;
      let settle = (): void => undefined;
      this.#inserting = new Promise((resolve) => (settle = resolve));
      const ended = () => {
        this.#insertsEnded++;
        this.#inserting = null;
        settle();
      };
      try {
        rows ??= this.#spool.readLines(seg);
        if (landed === undefined) {
          const ids = this.#ids(rows);
          landed = (await ask!(ids, rows)) ? ids : null;
          this.#landing?.end(); // settled: this attempt, begun, holds readers off until its rows are reported stored
        }
        const ids = landed ?? (await this.#insertSegment(seg, rows, parsed));
        this.#spool.remove(seg);
        this.#setUp(true, null);
        if (ids.length > 0) this.#events.written(ids.length, ids);
        ended();
        return true;
      } catch (err) {
        ended();
        if (rows === null && (err as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
          this.#spool.remove(seg);
          this.#lastError = new Error(`spool segment ${seg.name} is gone from disk: its ${seg.rows} rows were not inserted by this process`, { cause: err });
          this.#events.error(this.#lastError, attempt);
          this.#events.dropped(seg.rows, 'missing');
          return true;
        }
        this.#lastError = err;
        this.#events.error(err, attempt);
        this.#setUp(false, err);
        if (this.#closed) return false;
        await this.#sleep(this.#backoff(attempt));
      }
    }
  }

  /**
   * Insert a segment's lines as they are; once ClickHouse refused them as data, its rows parsed (kept in `parsed` for
   * the retries), bisected by #insertRows. Returns the ids of the rows stored.
   */
  async #insertSegment(seg: Segment, rows: RowLines, parsed: { rows: Row[] | null }): Promise<string[]> {
    const idKey = this.#opts.idKey;
    if (parsed.rows === null) {
      try {
        await this.#store.insertLines(this.#table, rows.lines, `spool-${seg.name}`, rows.columns);
        return this.#ids(rows);
      } catch (err) {
        if (!isRowError(err)) throw err;
        // The lines in hand, not the segment read again; every one set aside when its header's columns were refused.
        parsed.rows = parseRows<Row>(rows, isRowError(err, true));
      }
    }
    const stored = await this.#insertRows(seg, parsed.rows, 0, parsed.rows.length);
    return stored.map((r) => String(r[idKey]));
  }

  /**
   * Insert `rows[from, from + n)`; when ClickHouse refuses the data, split it in halves until the rows it refuses
   * are alone, and set those aside (spool/rejected.jsonl, counted as dropped): one bad row never holds back the rest.
   * Every part has its own deterministic token, so a replay of the same split is deduplicated too. Returns the rows
   * stored; throws when the store fails (not the data), to be retried whole.
   */
  async #insertRows(seg: Segment, rows: Row[], from: number, n: number): Promise<Row[]> {
    if (n === 0) return [];
    const part = rows.slice(from, from + n);
    try {
      await this.#store.insert(this.#table, part, from === 0 && n === rows.length ? `spool-${seg.name}` : `spool-${seg.name}-${from}-${n}`);
      return part;
    } catch (err) {
      if (!isRowError(err)) throw err;
      if (n === 1) {
        this.#spool.reject(part, err);
        this.#events.dropped(1, 'rejected');
        return [];
      }
      const half = Math.ceil(n / 2);
      return [...(await this.#insertRows(seg, rows, from, half)), ...(await this.#insertRows(seg, rows, from + half, n - half))];
    }
  }

  #ids = ({ lines, columns }: RowLines): string[] => lines.map((l) => lineId(l, this.#opts.idKey, columns) ?? '');

  #backoff(attempt: number): number {
    const capped = Math.min(this.#opts.retryMaxMs, this.#opts.retryBaseMs * 2 ** Math.min(attempt - 1, 30));
    return capped * (0.5 + Math.random() / 2);
  }

  /** Wait `ms`, or less when `flush` or `close` wants the writer to try again now. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => (clearTimeout(timer), resolve());
      const timer = setTimeout(done, ms).unref();
      this.#wake = () => ((this.#wake = null), done());
    });
  }

  #setUp(up: boolean, err: unknown): void {
    if (up === this.#up) return;
    this.#up = up;
    this.#events.state(up, err);
  }

  /** Write everything spooled now; resolves when the spool is empty (retrying while the store fails). */
  async flush(): Promise<void> {
    this.#wake?.();
    do await this.#pass(); while (this.#spool.rows > 0 && !this.#closed); // the write running first (an earlier process's)
  }

  /**
   * Write every row spooled before this call (leftovers and the requests an earlier process left in flight included;
   * later rows do not hold it: an export under traffic, api/admin.ts). Resolves once they are in the store or `boundMs`
   * passed, with how many are not (0: caught up; -1: not told from later ones, the disk refusing to seal). The rows
   * are told by identity: the segments listed at the call, sealed first (their times are the wall clock's, which a step
   * fools); one still listed counts a row at least (a leftover the disk would not let be read counts none of its own).
   */
  async caughtUp(boundMs: number): Promise<number> {
    let list: readonly Segment[] = [];
    let mine: Set<Segment> | null = null;
    let on = true; // past the bound every loop stops: a seal every rest while the disk refuses made an insert each
    const waiting = (): number => (mine === null ? -1 : list.reduce((n, seg) => n + (mine!.has(seg) ? Math.max(1, seg.rows) : 0), 0));
    this.#wake?.();
    await within((async () => {
      // The requests an earlier process left in flight join the spool (as interrupted rows) as a write begins.
      for (; on && !this.#closed && (this.#recovered === null || this.#recovered.length > 0); await pause(20)) this.#writing ??= this.#write();
      for (; on && !this.#closed && mine === null; await pause(20)) {
        if (this.#spool.failure === null) list = this.#spool.seal(); // not while the disk refuses: each seal spills
        if (this.#spool.failure === null) mine = new Set(list);
      }
      while (on && !this.#closed && waiting() > 0) await this.#pass();
    })(), boundMs);
    on = false;
    return waiting();
  }

  /** One write after the one running; a 20 ms rest when it moved nothing (the disk refusing to seal: it would spin). */
  async #pass(): Promise<void> {
    while (this.#writing !== null) await this.#writing;
    if (this.#closed) return;
    const before = this.#spool.rows;
    this.#clearTimer();
    await (this.#writing = this.#write());
    if (this.#spool.rows > 0 && this.#spool.rows >= before) await pause(20);
  }

  /** Stop taking rows, try once (for at most `boundMs`) to write what is spooled, and close the spool; the rest stays on disk. */
  async close(boundMs = Infinity): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearTimer();
    this.#wake?.();
    await within((async () => { // bounded: a store that hangs held a stop for minutes, past any supervisor's grace
      while (this.#writing !== null) await this.#writing;
      await (this.#writing = this.#write());
    })(), boundMs);
    this.#spool.close();
  }
}
