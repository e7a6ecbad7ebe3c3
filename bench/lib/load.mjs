// The closed-loop load generator: `concurrency` workers, each sending one request at a time on its own keep-alive
// connection (an undici Pool with one connection per worker) and reading the whole answer. A `Load` is driven in
// time-bounded phases (`run(ms, measure)`): workers stop issuing when the phase ends and the requests in flight
// finish, each bounded by the request timeout. A request counts in a measured phase when it completes inside it
// and succeeds (2xx and the expected body); failures are counted as errors, whenever they happen.
// Statistics accumulate over the measured phases, so one target can be measured in several interleaved slices.

import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { percentile } from './stats.mjs';

/**
 * BENCH_API_KEY as a Bearer key, for every request the benchmark sends to a gateway (the Tollgate targets are then
 * configured with it, bench/tollgate.mjs; the other targets ignore it); no header without it.
 */
export function authHeaders() {
  const key = process.env.BENCH_API_KEY;
  return key ? { authorization: `Bearer ${key}` } : {};
}

export class Load {
  /**
   * @param {object} o
   * @param {string} o.origin
   * @param {string} o.path
   * @param {string} o.body  request body (JSON text)
   * @param {boolean} o.stream  expect SSE ending with `data: [DONE]`
   * @param {number} o.concurrency
   * @param {number} [o.requestTimeoutMs]
   */
  constructor(o) {
    this.o = o;
    const timeoutMs = o.requestTimeoutMs ?? 15_000;
    this.pool = new Pool(o.origin, {
      connections: o.concurrency,
      pipelining: 1,
      keepAliveTimeout: 120_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    this.headers = { 'content-type': 'application/json', accept: o.stream ? 'text/event-stream' : 'application/json', ...authHeaders() };
    this.valid = o.stream
      ? (text) => text.endsWith('data: [DONE]\n\n') && text.includes('"usage":{"prompt_tokens"')
      : (text) => text.startsWith('{"id":"chatcmpl-') && text.includes('"usage":{"prompt_tokens"');
    this.issued = 0;
    this.completed = 0;
    this.errors = 0;
    this.errorKinds = new Map();
    this.latencies = new Float64Array(1 << 16);
    this.windowRequests = 0;
    this.seconds = 0;
    this.slices = [];
  }

  #record(ms) {
    if (this.windowRequests === this.latencies.length) {
      const bigger = new Float64Array(this.latencies.length * 2);
      bigger.set(this.latencies);
      this.latencies = bigger;
    }
    this.latencies[this.windowRequests++] = ms;
  }

  /** Run the workers for `ms`; when `measure`, count completions and latencies. Resolves when all are idle. */
  async run(ms, measure) {
    let running = true;
    const start = performance.now();
    let end = 0;
    const before = this.windowRequests;
    const timer = setTimeout(() => {
      end = performance.now();
      running = false;
    }, ms);
    const worker = async () => {
      while (running) {
        const t0 = performance.now();
        this.issued++;
        let problem = null;
        try {
          const res = await this.pool.request({ method: 'POST', path: this.o.path, headers: this.headers, body: this.o.body });
          const text = await res.body.text();
          if (res.statusCode < 200 || res.statusCode >= 300) problem = `HTTP ${res.statusCode}: ${text.slice(0, 160)}`;
          else if (!this.valid(text)) problem = `unexpected body: ${text.slice(0, 160)}`;
        } catch (err) {
          problem = `${err?.code ?? err?.name ?? 'Error'}: ${err?.message ?? err}`;
        }
        this.completed++;
        if (problem !== null) {
          this.errors++;
          this.errorKinds.set(problem, (this.errorKinds.get(problem) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 10)); // an unreachable target fails fast: do not spin
        } else if (measure && running) {
          this.#record(performance.now() - t0); // throughput and latency: successes only
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: this.o.concurrency }, worker));
    } finally {
      clearTimeout(timer);
    }
    if (measure) {
      const seconds = (end - start) / 1000;
      const n = this.windowRequests - before;
      this.seconds += seconds;
      this.slices.push(n / seconds);
      return n / seconds;
    }
    return null;
  }

  summary() {
    const sorted = this.latencies.slice(0, this.windowRequests).sort();
    return {
      issued: this.issued,
      completed: this.completed,
      errors: this.errors,
      errorKinds: [...this.errorKinds.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5),
      windowRequests: this.windowRequests,
      seconds: this.seconds,
      rps: this.seconds > 0 ? this.windowRequests / this.seconds : 0,
      slices: this.slices,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
    };
  }

  close() {
    return this.pool.close().catch(() => undefined);
  }
}
