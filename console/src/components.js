// Small pieces the pages share: loading an endpoint, a stat card, an error line, a chart.

import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { get } from './api.js';
import { usd } from './format.js';

/**
 * GET `path` (again every `everyMs` when given); `reload()` fetches now. `loading` is true until the first answer,
 * data or error: a page shows "Loading…" while it is, and the error (ErrorNote) once the call failed.
 */
export function useApi(path, { everyMs } = {}) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return undefined;
    const ctl = new AbortController();
    const load = () =>
      get(path, { signal: ctl.signal })
        .then((data) => setState({ data, error: null, loading: false }))
        .catch((error) => {
          if (!ctl.signal.aborted) setState((s) => ({ ...s, error, loading: false }));
        });
    load();
    const timer = everyMs ? setInterval(load, everyMs) : null;
    return () => {
      ctl.abort();
      if (timer) clearInterval(timer);
    };
  }, [path, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export const ErrorNote = ({ error }) => (error ? html`<p class="error" role="alert">${error.message}</p>` : null);

export const Loading = () => html`<p class="muted" aria-busy="true">Loading…</p>`;

/**
 * What a page shows for one `useApi` call: "Loading…" until it answers, then `view(data)`; nothing when it failed
 * without data (its ErrorNote says why). Data from an earlier answer stays shown when a refresh fails.
 */
export const loaded = (call, view) => (call.data !== null ? view(call.data) : call.loading ? html`<${Loading} />` : null);

// Direction controls that reorder the text after them: embeddings and overrides (U+202A-U+202E) and isolates
// (U+2066-U+2069), the "Trojan Source" characters (CVE-2021-42574).
const BIDI_CONTROL = /([\u202A-\u202E\u2066-\u2069])/;
const codePoint = (c) => `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** A name as plain text, where no element can go (an <option>, alone on its line): its direction controls shown. */
export const nameText = (text) =>
  String(text ?? '').split(BIDI_CONTROL).map((part, i) => (i % 2 === 0 ? part : `⟨${codePoint(part)}⟩`)).join('');

/**
 * A name or id from the data (a model, a provider, a combo, a key): isolated from the text around it (<bdi>), so a
 * right-to-left name cannot move what follows it; a direction control in it is shown as a marker and not applied, so
 * `fake/<U+202E>gnp.exe` reads as what it is, not as `fake/exe.png`.
 */
const UNKNOWN_COST = 'No price covers this paid model (its price source is none): the cost is not known, and 0 is not its price.';

/** A cost the API gave, or "unknown" (null: a paid model priced nowhere, docs/catalog.md), never a placeholder $0.00. */
export function Cost({ value, why = UNKNOWN_COST }) {
  return value === null ? html`<span class="unknown" title=${why}>unknown</span>` : usd(value);
}

export function Name({ text }) {
  const s = text === null || text === undefined ? '' : String(text);
  const parts = s.split(BIDI_CONTROL);
  if (parts.length === 1) return html`<bdi>${s}</bdi>`;
  return html`<bdi>${parts.map((part, i) =>
    i % 2 === 0 ? part : html`<span class="bidi-control" title=${`${codePoint(part)}: a text-direction control in the data, shown and not applied`}>⟨${codePoint(part)}⟩</span>`)}</bdi>`;
}

export const Stat = ({ label, value, hint }) => html`<div class="stat">
  <div class="stat-label">${label}</div>
  <div class="stat-value">${value}</div>
  ${hint ? html`<div class="stat-hint">${hint}</div>` : null}
</div>`;

/** A horizontal bar of `percent` out of 100; coloured by level (80 %, 100 %) unless it is a `share`. */
export const Meter = ({ label, percent, share = false }) => html`<div class="meter" role="meter" aria-label=${label} aria-valuemin="0" aria-valuemax="100" aria-valuenow=${Math.round(percent ?? 0)}>
  <div class="meter-fill" style=${{ width: `${Math.min(100, Math.max(0, percent ?? 0))}%` }} data-level=${share ? 'share' : percent >= 100 ? 'over' : percent >= 80 ? 'high' : 'ok'}></div>
</div>`;

const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/**
 * A uPlot chart: `labels` on x (strings), `series` [{label, values}]; bars or a line. Sized to its container, redrawn
 * when the data, the width or the colour scheme changes. `summary` is the accessible text of the chart.
 */
export function Chart({ labels, series, bars = false, summary, height = 220, format = (v) => String(v) }) {
  const box = useRef(null);
  const [scheme, setScheme] = useState(0);
  useEffect(() => {
    const mq = matchMedia('(prefers-color-scheme: dark)');
    const bump = () => setScheme((n) => n + 1);
    mq.addEventListener('change', bump);
    const obs = new MutationObserver(bump);
    obs.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => {
      mq.removeEventListener('change', bump);
      obs.disconnect();
    };
  }, []);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const ink = cssVar('--ink-2');
    const grid = cssVar('--line');
    const palette = [cssVar('--accent'), cssVar('--accent-2'), cssVar('--accent-3')];
    const xs = labels.map((_, i) => i);
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: series.length > 1 },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] } },
      axes: [
        { ...axis, values: (_u, ticks) => ticks.map((t) => labels[t] ?? ''), space: 40 },
        { ...axis, values: (_u, ticks) => ticks.map(format), size: 76 },
      ],
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          stroke: palette[i % palette.length],
          fill: bars ? palette[i % palette.length] : undefined,
          width: bars ? 0 : 2,
          points: { show: !bars && labels.length < 40 },
          paths: bars ? uPlot.paths.bars({ size: [0.7, 40] }) : undefined,
          value: (_u, v) => (v === null ? '–' : format(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [labels.join('|'), JSON.stringify(series), scheme, bars, height]);
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${summary}></div>
  </figure>`;
}
