// The cost report: a period's totals by group (/api/usage/cost), month to date, the 30-day projection, each
// provider's share and average per 1M tokens; the last 7 full days (/api/usage/projection) as a chart.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Chart, ErrorNote, Meter, Name, Stat, loaded, useApi } from '../components.js';
import { int, pct, usd } from '../format.js';

const PERIODS = [['day', 'Today'], ['week', 'This week'], ['month', 'This month']];

export function CostPage() {
  const [period, setPeriod] = useState('day');
  const cost = useApi(`/api/usage/cost?period=${period}`);
  const proj = useApi('/api/usage/projection');
  const p = proj.data;
  return html`
    <div class="toolbar">
      <label for="cost-period">Period</label>
      <select id="cost-period" value=${period} onChange=${(e) => setPeriod(e.currentTarget.value)}>
        ${PERIODS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
      </select>
    </div>
    <${ErrorNote} error=${cost.error} />
    ${loaded(cost, (c) => html`
      <section class="card" aria-labelledby="cost-totals">
        <h2 id="cost-totals">Totals</h2>
        <div class="stats">
          <${Stat} label="Cost" value=${usd(c.totals.cost)} hint=${`list price ${usd(c.totals.list_cost)}`} />
          <${Stat} label="Requests" value=${int(c.totals.requests)} />
          <${Stat} label="Tokens" value=${int(c.totals.tokens)} />
          <${Stat} label="Avg per 1M tokens" value=${usd(c.totals.avg_cost_per_1m_tokens)} />
          <${Stat} label="Month to date" value=${usd(c.month_to_date.cost)} hint=${`${int(c.month_to_date.tokens)} tokens`} />
          <${Stat} label="30-day projection" value=${usd(c.projection.cost_30d)} hint=${`${int(c.projection.tokens_30d)} tokens`} />
        </div>
      </section>
      <div class="grid-2">
        <section class="card" aria-labelledby="cost-groups">
          <h2 id="cost-groups">By group</h2>
          <div class="table-wrap"><table>
            <thead><tr><th scope="col">Group</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th><th scope="col" class="num">List cost</th></tr></thead>
            <tbody>${Object.entries(c.groups).map(([g, v]) => html`<tr><td><${Name} text=${g} /></td><td class="num">${int(v.requests)}</td><td class="num">${int(v.tokens)}</td><td class="num">${usd(v.cost)}</td><td class="num">${usd(v.list_cost)}</td></tr>`)}</tbody>
          </table></div>
        </section>
        <section class="card" aria-labelledby="cost-providers">
          <h2 id="cost-providers">Providers (share of ${c.share_basis})</h2>
          ${c.providers.length === 0 ? html`<p class="muted">No usage in this period.</p>` : null}
          <ul class="shares">${c.providers.map((v) => html`<li>
            <div class="share-head"><strong><${Name} text=${v.name} /></strong> <span class="muted small"><${Name} text=${v.group} /></span><span class="share-pct">${pct(v.share_pct)}</span></div>
            <${Meter} share label=${`${v.name}: share of ${c.share_basis}`} percent=${v.share_pct} />
            <div class="muted small">${usd(v.cost)} · ${int(v.tokens)} tokens · ${usd(v.avg_cost_per_1m_tokens)} per 1M</div>
          </li>`)}</ul>
        </section>
      </div>`)}
    <section class="card" aria-labelledby="cost-days">
      <h2 id="cost-days">Cost per day, last 7 full days</h2>
      <${ErrorNote} error=${proj.error} />
      ${p ? html`
        <div class="stats">
          <${Stat} label="Daily average" value=${usd(p.daily_average.cost)} />
          <${Stat} label="Monthly at this rate" value=${usd(p.monthly.cost)} hint=${`${int(p.monthly.tokens)} tokens`} />
        </div>
        <${Chart} labels=${p.daily.map((d) => d.date.slice(5))} series=${[{ label: 'Cost (USD)', values: p.daily.map((d) => d.cost) }]}
          summary=${`Cost per day over the last 7 full days; daily average ${usd(p.daily_average.cost)}`} format=${usd} />` : null}
    </section>`;
}
