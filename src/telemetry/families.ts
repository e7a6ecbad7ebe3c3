// Labelled counter and histogram families for the request path. A child is resolved once per label set and then
// updated by plain arithmetic: no label hashing or validation per request (prom-client's own `labels()` does both
// on every call). The families implement what prom-client's Registry reads (`name`, `type`, `get()`), so they are
// exposed by the same registry, in the same text format, as every other metric.

import type { Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

interface Sample {
  readonly labels: Labels;
  readonly value: number;
  readonly metricName?: string;
}

interface MetricObject {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly values: Sample[];
  readonly aggregator: 'sum';
}

export class CounterChild {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(v = 1): void {
    this.value += v;
  }
}

export class HistogramChild {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly labels: Labels, private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

abstract class Family<C extends { labels: Labels }> {
  readonly #children = new Map<string, C>();
  constructor(readonly name: string, readonly help: string, private readonly labelNames: readonly string[], registry: Registry) {
    registry.registerMetric(this as never);
  }
  protected abstract make(labels: Labels): C;

  /** The child for these label values (in labelNames order). */
  child(...values: string[]): C {
    const key = values.join('\u0000');
    let c = this.#children.get(key);
    if (!c) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      c = this.make(labels);
      this.#children.set(key, c);
    }
    return c;
  }

  protected children(): IterableIterator<C> {
    return this.#children.values();
  }
}

export class CounterFamily extends Family<CounterChild> {
  readonly type = 'counter';
  protected make(labels: Labels): CounterChild {
    return new CounterChild(labels);
  }
  get(): MetricObject {
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values: [...this.children()].map((c) => ({ labels: c.labels, value: c.value })) };
  }
}

export class HistogramFamily extends Family<HistogramChild> {
  readonly type = 'histogram';
  constructor(name: string, help: string, labelNames: readonly string[], private readonly bounds: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }
  protected make(labels: Labels): HistogramChild {
    return new HistogramChild(labels, this.bounds);
  }
  get(): MetricObject {
    const values: Sample[] = [];
    for (const c of this.children()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += c.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: String(le), ...c.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...c.labels }, value: c.count });
      values.push({ metricName: `${this.name}_sum`, labels: c.labels, value: c.sum });
      values.push({ metricName: `${this.name}_count`, labels: c.labels, value: c.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}
