// Settings written to the config file (admin keys only): budgets, alert switches and thresholds, prices. Each form
// saves with its button or Enter; the server validates with the config schema, and the answer (or the refusal,
// naming the field) is shown beside the form: the schema is the one judge of a value (no min/max in the inputs). A value fed by ${VAR} is read-only. The ETag from the last read or
// save goes with every save: someone else's edit in between is a 412, and the form says to reload.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../api.js';
import { ErrorNote, Loading, Name, nameText } from '../components.js';

const KIND_LABELS = {
  quota_warning: 'Quota warning', quota_exhausted: 'Quota exhausted', quota_reset: 'Quota reset', daily_budget: 'Daily budget alerts',
  monthly_budget: 'Monthly budget alerts', cost_anomaly: 'Cost anomaly', exhaustion_pattern: 'Exhaustion pattern',
};
const PRICE_LABELS = [['input', 'Input'], ['output', 'Output'], ['cached', 'Cached input'], ['cache_write', 'Cache write'], ['reasoning', 'Reasoning']];

const numOrNull = (s) => (s.trim() === '' ? null : Number(s));
const listOf = (s) => s.split(',').map((x) => x.trim()).filter((x) => x !== '').map(Number);

/** One form's save: its outcome message, and the fresh settings on success. */
function useSave(settings, onSaved) {
  const [outcome, setOutcome] = useState(null);
  const [busy, setBusy] = useState(false);
  const save = async (path, body) => {
    setBusy(true);
    setOutcome(null);
    try {
      const r = await api(path, { method: 'PUT', body, etag: settings.etag });
      onSaved(r.body);
      setOutcome({ ok: true, text: 'Saved to the config file and applied.' });
    } catch (err) {
      const text = err instanceof ApiError && err.status === 412 ? `${err.message} (reload the page)` : err.message;
      setOutcome({ ok: false, text });
    } finally {
      setBusy(false);
    }
  };
  return { outcome, busy, save };
}

const Outcome = ({ outcome }) =>
  outcome === null ? null : html`<p class=${outcome.ok ? 'ok' : 'error'} role=${outcome.ok ? 'status' : 'alert'}>${outcome.text}</p>`;

function Field({ id, label, value, onInput, fed, type = 'number', step = 'any', hint }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input id=${id} name=${id} type=${type} step=${type === 'number' ? step : undefined} value=${value}
      readOnly=${fed} aria-describedby=${fed || hint ? `${id}-hint` : undefined} onInput=${(e) => onInput(e.currentTarget.value)} />
    ${fed ? html`<small id=${`${id}-hint`} class="muted">set by an environment variable (\${…}) in the config file: read-only here</small>`
      : hint ? html`<small id=${`${id}-hint`} class="muted">${hint}</small>` : null}
  </div>`;
}

const str = (v) => (v === null || v === undefined ? '' : String(v));

function BudgetsForm({ settings, onSaved }) {
  const b = settings.budgets;
  const [daily, setDaily] = useState(str(b.daily_usd));
  const [monthly, setMonthly] = useState(str(b.monthly_usd));
  const [enabled, setEnabled] = useState(b.auto_switch.enabled);
  const [to, setTo] = useState(b.auto_switch.to ?? '');
  const { outcome, busy, save } = useSave(settings, onSaved);
  const fed = (p) => settings.env_fed.includes(p);
  // Only what changed is sent: the file keeps every other line as it is.
  const submit = (e) => {
    e.preventDefault();
    const now = settings.budgets;
    const body = {};
    const auto = {};
    if (!fed('budgets.daily_usd') && numOrNull(daily) !== now.daily_usd) body.daily_usd = numOrNull(daily);
    if (!fed('budgets.monthly_usd') && numOrNull(monthly) !== now.monthly_usd) body.monthly_usd = numOrNull(monthly);
    if (enabled !== now.auto_switch.enabled) auto.enabled = enabled;
    if ((to === '' ? null : to) !== now.auto_switch.to) auto.to = to === '' ? null : to;
    if (Object.keys(auto).length > 0) body.auto_switch = auto;
    save('/api/settings/budgets', body);
  };
  return html`<form class="card settings" aria-labelledby="set-budgets" onSubmit=${submit}>
    <h2 id="set-budgets">Budgets (USD)</h2>
    <div class="fields">
      <${Field} id="daily-budget" label="Daily budget" value=${daily} onInput=${setDaily} fed=${fed('budgets.daily_usd')} hint="empty: no daily budget" />
      <${Field} id="monthly-budget" label="Monthly budget" value=${monthly} onInput=${setMonthly} fed=${fed('budgets.monthly_usd')} hint="empty: no monthly budget" />
      <div class="field check"><input id="auto-switch" type="checkbox" checked=${enabled} onChange=${(e) => setEnabled(e.currentTarget.checked)} />
        <label for="auto-switch">Auto-switch when the daily budget is exceeded</label></div>
      <div class="field"><label for="auto-switch-to">Auto-switch target</label>
        <select id="auto-switch-to" value=${to} onChange=${(e) => setTo(e.currentTarget.value)}>
          <option value="">(none)</option>
          ${settings.switch_targets.map((t) => html`<option value=${t}>${nameText(t)}</option>`)}
        </select></div>
    </div>
    <button type="submit" disabled=${busy}>Save budgets</button>
    <${Outcome} outcome=${outcome} />
  </form>`;
}

function AlertsForm({ settings, onSaved }) {
  const a = settings.alerts;
  const [kinds, setKinds] = useState(a.kinds);
  const [dashboard, setDashboard] = useState(a.channels.dashboard);
  const [email, setEmail] = useState(a.channels.email?.enabled ?? false);
  const [webhook, setWebhook] = useState(a.channels.webhook?.enabled ?? false);
  const [quota, setQuota] = useState(a.thresholds.quota.join(', '));
  const [daily, setDaily] = useState(a.thresholds.daily.join(', '));
  const [monthly, setMonthly] = useState(a.thresholds.monthly.join(', '));
  const [multiple, setMultiple] = useState(String(a.thresholds.anomaly_multiple));
  const { outcome, busy, save } = useSave(settings, onSaved);
  const submit = (e) => {
    e.preventDefault();
    const now = settings.alerts;
    const changedKinds = Object.fromEntries(Object.entries(kinds).filter(([k, v]) => v !== now.kinds[k]));
    const channels = {};
    if (dashboard !== now.channels.dashboard) channels.dashboard = dashboard;
    if (now.channels.email && email !== now.channels.email.enabled) channels.email = { enabled: email };
    if (now.channels.webhook && webhook !== now.channels.webhook.enabled) channels.webhook = { enabled: webhook };
    const thresholds = {};
    for (const [k, v] of [['quota', quota], ['daily', daily], ['monthly', monthly]]) {
      if (listOf(v).join() !== now.thresholds[k].join()) thresholds[k] = listOf(v);
    }
    if (numOrNull(multiple) !== now.thresholds.anomaly_multiple) thresholds.anomaly_multiple = numOrNull(multiple);
    save('/api/settings/alerts', { kinds: changedKinds, channels, thresholds });
  };
  const check = (id, label, checked, set, disabled = false) => html`<div class="field check">
    <input id=${id} type="checkbox" checked=${checked} disabled=${disabled} onChange=${(e) => set(e.currentTarget.checked)} /><label for=${id}>${label}</label></div>`;
  return html`<form class="card settings" aria-labelledby="set-alerts" onSubmit=${submit}>
    <h2 id="set-alerts">Alerts</h2>
    <fieldset><legend>Kinds</legend><div class="checks">
      ${Object.keys(KIND_LABELS).map((k) => check(`kind-${k}`, KIND_LABELS[k], kinds[k] !== false, (v) => setKinds({ ...kinds, [k]: v })))}
    </div></fieldset>
    <fieldset><legend>Channels</legend><div class="checks">
      ${check('channel-dashboard', 'Dashboard inbox', dashboard, setDashboard)}
      ${check('channel-email', a.channels.email ? 'Email' : 'Email (not configured)', email, setEmail, !a.channels.email)}
      ${check('channel-webhook', a.channels.webhook ? 'Webhook' : 'Webhook (not configured)', webhook, setWebhook, !a.channels.webhook)}
    </div></fieldset>
    <fieldset><legend>Thresholds</legend><div class="fields">
      <${Field} id="th-quota" type="text" label="Quota warning at (%)" value=${quota} onInput=${setQuota} hint="comma-separated, e.g. 80, 90" />
      <${Field} id="th-daily" type="text" label="Daily budget alerts at (%)" value=${daily} onInput=${setDaily} hint="e.g. 80, 100" />
      <${Field} id="th-monthly" type="text" label="Monthly budget alerts at (%)" value=${monthly} onInput=${setMonthly} hint="e.g. 50, 80, 100" />
      <${Field} id="th-anomaly" label="Cost anomaly multiple" value=${multiple} onInput=${setMultiple} hint="today over this many times the daily average" />
    </div></fieldset>
    <button type="submit" disabled=${busy}>Save alerts</button>
    <${Outcome} outcome=${outcome} />
  </form>`;
}

function PriceForm({ id, p, settings, onSaved }) {
  const [price, setPrice] = useState(Object.fromEntries(PRICE_LABELS.map(([k]) => [k, str(p.price?.[k])])));
  const { outcome, busy, save } = useSave(settings, onSaved);
  const fed = (k) => settings.env_fed.includes(`providers.${id}.price.${k}`) || settings.env_fed.includes(`providers.${id}.price`);
  const submit = (e) => {
    e.preventDefault();
    const body = {};
    for (const [k] of PRICE_LABELS) if (!fed(k) && numOrNull(price[k]) !== (p.price?.[k] ?? null)) body[k] = numOrNull(price[k]);
    save(`/api/settings/prices/${encodeURIComponent(id)}`, { price: body });
  };
  return html`<form class="card settings" aria-labelledby=${`set-price-${id}`} onSubmit=${submit}>
    <h3 id=${`set-price-${id}`}><${Name} text=${p.name} /> <span class="muted small"><${Name} text=${id} /> · ${p.group}</span></h3>
    <div class="fields prices">
      ${PRICE_LABELS.map(([k, label]) => html`<${Field} id=${`price-${id}-${k}`} label=${`${label} price`} value=${price[k]} fed=${fed(k)}
        onInput=${(v) => setPrice({ ...price, [k]: v })} />`)}
    </div>
    ${Object.entries(p.models).some(([, mp]) => mp !== null) ? html`<p class="muted small">Model overrides: ${Object.entries(p.models).filter(([, mp]) => mp !== null).map(([m, mp], i) => html`${i > 0 ? '; ' : ''}<${Name} text=${m} /> (${Object.entries(mp).map(([k, v]) => `${k} ${v}`).join(', ')})`)}</p>` : null}
    <button type="submit" disabled=${busy}>Save <${Name} text=${p.name} /> prices</button>
    <${Outcome} outcome=${outcome} />
  </form>`;
}

export function SettingsPage() {
  const [settings, setSettings] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api('/api/settings')
      .then((r) => setSettings(r.body))
      .catch(setError);
  }, []);
  // The forms keep what was typed; the new ETag reaches every form for its next save.
  const saved = (next) => setSettings((s) => ({ ...s, ...next }));
  if (error) {
    return error instanceof ApiError && error.status === 403
      ? html`<p class="error" role="alert">Settings need an admin key: ${error.message}</p>`
      : html`<${ErrorNote} error=${error} />`;
  }
  if (settings === null) return html`<${Loading} />`;
  return html`
    ${settings.writable ? html`<p class="muted small">Saved to <code>${settings.file}</code>; comments and \${VAR} references stay as they are.</p>`
      : settings.file_error ? html`<p class="error" role="alert">The config file cannot be edited: ${settings.file_error}. Settings are shown, not saved; fix the file by hand.</p>`
      : html`<p class="error" role="alert">This gateway runs without a config file: settings are shown, not saved.</p>`}
    <div class="grid-2">
      <${BudgetsForm} settings=${settings} onSaved=${saved} />
      <${AlertsForm} settings=${settings} onSaved=${saved} />
    </div>
    <section aria-labelledby="prices-title">
      <h2 id="prices-title" class="section-title">Prices (USD per 1M tokens)</h2>
      <div class="grid-2">
        ${Object.entries(settings.prices).map(([id, p]) => html`<${PriceForm} key=${id} id=${id} p=${p} settings=${settings} onSaved=${saved} />`)}
      </div>
    </section>`;
}
