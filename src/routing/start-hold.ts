// The start's hold on routing that depends on figures not known yet. The budget's auto-switch and a combo's skip of a
// provider out of quota go by the last evaluation's figures (src/alerts/service.ts), and the first one after a start
// runs once the spool's leftovers are read and the store is open: until then a request for a paid model was routed as
// if nothing had been spent. Such a request now waits for that first evaluation (app.ts releases the hold when it has
// run), bounded: the first request held starts the bound (`storage.request_timeout_ms`), past which every request is
// routed on what is known (the store down at start), and `expired` is told once. Requests whose routing reads no such
// figure are never held. Armed once per process: a config reload does not arm it again.

export interface StartHoldOptions {
  /** How long the first request held may wait, in ms (read when it arrives). */
  readonly boundMs: () => number;
  /** The bound passed before the figures came (told once, with the bound and how many requests were waiting). */
  readonly expired?: (boundMs: number, waiting: number) => void;
}

export class StartHold {
  readonly #opts: StartHoldOptions;
  #open = true;
  #stopped = false;
  #waiting = 0;
  #release: () => void = () => undefined;
  readonly #released: Promise<void>;
  #timer: NodeJS.Timeout | null = null;

  constructor(opts: StartHoldOptions) {
    this.#opts = opts;
    this.#released = new Promise<void>((resolve) => (this.#release = resolve));
  }

  /**
   * True until the figures are known or the bound has passed, and from a stop that began before either: a request
   * whose routing reads them waits (then, stopped, is refused: held.ts).
   */
  get holding(): boolean {
    return this.#open || this.#stopped;
  }

  /** The process began to stop while the hold was on: the requests it held are refused, not routed (held.ts). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The stop has begun: the requests held go on at once to be refused, as is every later one that would wait. */
  stop(): void {
    if (!this.#open) return;
    this.#stopped = true;
    this.release();
  }

  /** The requests waiting now. */
  get waiting(): number {
    return this.#waiting;
  }

  /** The first evaluation after the start has run (or can no longer run): every request held goes on, none waits again. */
  release(): void {
    if (!this.#open) return;
    this.#open = false;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#release();
  }

  /** Resolves once the hold is released (at once when it is), or once `gone` resolves (the client left). */
  async wait(gone?: Promise<unknown>): Promise<void> {
    if (!this.#open) return;
    if (this.#timer === null) {
      const ms = this.#opts.boundMs();
      this.#timer = setTimeout(() => {
        if (!this.#open) return;
        this.#opts.expired?.(ms, this.#waiting);
        this.release();
      }, ms);
      this.#timer.unref();
    }
    this.#waiting++;
    try {
      await (gone === undefined ? this.#released : Promise.race([this.#released, gone]));
    } finally {
      this.#waiting--;
    }
  }
}
