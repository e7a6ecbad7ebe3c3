// Overview: today, this week and this month (/api/usage/overview), tokens per hour today with the peak and the
// quietest hour (/api/usage/hourly), and the combos (/api/usage/combos).

import { html } from 'htm/preact';
import { Chart, ErrorNote, Name, Stat, loaded, useApi } from '../components.js';
import { int, pct, seconds, usd } from '../format.js';

function Period({ title, p }) {
  return html`<section class="card" aria-labelledby=${`ov-${title}`}>
    <h2 id=${`ov-${title}`}>${title}</h2>
    <div class="stats">
      <${Stat} label="Requests" value=${int(p.requests)} />
      <${Stat} label="Tokens" value=${int(p.tokens)} />
      <${Stat} label="Cost" value=${usd(p.cost)} />
      <${Stat} label="Avg latency" value=${seconds(p.avg_response_s)} />
      <${Stat} label="Success rate" value=${pct(p.success_rate_pct)} />
      <${Stat} label="Top model" value=${p.top_model ? html`<${Name} text=${p.top_model.model} />` : '–'} hint=${p.top_model ? `${int(p.top_model.tokens)} tokens · ${pct(p.top_model.share_pct)}` : null} />
    </div>
  </section>`;
}

export function OverviewPage() {
  const ov = useApi('/api/usage/overview', { everyMs: 15000 });
  const hourly = useApi('/api/usage/hourly', { everyMs: 60000 });
  const combos = useApi('/api/usage/combos');
  const h = hourly.data;
  return html`
    <${ErrorNote} error=${ov.error} />
    ${loaded(ov, (data) => html`<div class="grid-3">
      <${Period} title="Today" p=${data.today} />
      <${Period} title="This week" p=${data.week} />
      <${Period} title="This month" p=${data.month} />
    </div>`)}
    <section class="card" aria-labelledby="hourly-title">
      <h2 id="hourly-title">Tokens per hour, today (${h?.tz ?? '…'})</h2>
      <${ErrorNote} error=${hourly.error} />
      ${h ? html`
        <div class="stats">
          <${Stat} label="Peak hour" value=${h.peak ? h.peak.hour : '–'} hint=${h.peak ? `${int(h.peak.tokens)} tokens` : null} />
          <${Stat} label="Quietest hour" value=${h.low ? h.low.hour : '–'} hint=${h.low ? `${int(h.low.tokens)} tokens` : null} />
          <${Stat} label="Tokens today" value=${int(h.totals.tokens)} />
        </div>
        <${Chart} bars labels=${h.entries.map((e) => e.hour.slice(0, 2))} series=${[{ label: 'Tokens', values: h.entries.map((e) => e.tokens) }]}
          summary=${`Tokens per hour today; peak ${h.peak?.hour ?? 'none'} with ${h.peak?.tokens ?? 0} tokens`} format=${int} />` : null}
    </section>
    <section class="card" aria-labelledby="combos-title">
      <h2 id="combos-title">Combos today</h2>
      <${ErrorNote} error=${combos.error} />
      ${combos.data && combos.data.combos.length === 0 ? html`<p class="muted">No combo requests today.</p>` : null}
      ${combos.data && combos.data.combos.length > 0 ? html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Combo</th><th scope="col">Strategy</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Success</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th></tr></thead>
        <tbody>${combos.data.combos.map((c) => html`<tr><td class="model-cell"><${Name} text=${c.combo} /></td><td>${c.strategy ?? '–'}</td><td class="num">${int(c.requests)}</td>
          <td class="num">${pct(c.success_rate_pct)}</td><td class="num">${int(c.tokens)}</td><td class="num">${usd(c.cost)}</td></tr>`)}</tbody>
      </table></div>` : null}
    </section>`;
}
