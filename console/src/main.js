// The console's shell: sign-in (when the gateway has keys), the navigation, the theme, and the page of the hash route.

import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, onUnauthorized, session } from './api.js';
import { ActivityPage } from './pages/activity.js';
import { OverviewPage } from './pages/overview.js';
import { CostPage } from './pages/cost.js';
import { QuotaPage } from './pages/quota.js';
import { AlertsPage } from './pages/alerts.js';
import { SettingsPage } from './pages/settings.js';
import { StatusPage } from './pages/status.js';
import { ProvidersPage } from './pages/providers.js';

const PAGES = [
  { id: 'activity', title: 'Activity', view: ActivityPage },
  { id: 'overview', title: 'Overview', view: OverviewPage },
  { id: 'cost', title: 'Cost', view: CostPage },
  { id: 'quota', title: 'Quota', view: QuotaPage },
  { id: 'providers', title: 'Providers', view: ProvidersPage },
  { id: 'alerts', title: 'Alerts', view: AlertsPage },
  { id: 'settings', title: 'Settings', view: SettingsPage },
  { id: 'status', title: 'Status', view: StatusPage },
];

// A provider's sign-in sends the browser back to `/?code=…&state=…` (pages/providers.js): the Providers page takes it.
const PROVIDERS = PAGES.find((p) => p.id === 'providers');
const signInCallback = () => new URLSearchParams(location.search).has('state');
const pageOf = (hash) => PAGES.find((p) => `#/${p.id}` === hash) ?? (hash === '' && signInCallback() ? PROVIDERS : PAGES[0]);

/** A route that needs a key: the sign-in form checks a key on it. */
const PROBE = '/api/budgets';

const THEMES = ['system', 'light', 'dark'];
const THEME_ITEM = 'tollgate.theme';

function applyTheme(theme) {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

function ThemeToggle() {
  const [theme, setTheme] = useState(sessionStorage.getItem(THEME_ITEM) ?? 'system');
  const next = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
  const choose = () => {
    applyTheme(next);
    sessionStorage.setItem(THEME_ITEM, next);
    setTheme(next);
  };
  return html`<button type="button" class="ghost" onClick=${choose} aria-label=${`Theme: ${theme}. Switch to ${next}`} title="Theme">
    ${theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'} <span class="hide-narrow">${theme}</span>
  </button>`;
}

function SignIn({ onSignedIn, problem }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(problem);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api(PROBE, { key });
      session.key = key;
      onSignedIn();
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'That key was not accepted.' : err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <form class="card" onSubmit=${submit}>
      <h1>Tollgate</h1>
      <p>This gateway has API keys. Sign in with one; it is kept for this tab only.</p>
      <label for="api-key">API key</label>
      <input id="api-key" name="api-key" type="password" autocomplete="current-password" required value=${key} onInput=${(e) => setKey(e.currentTarget.value)} />
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
  </main>`;
}

function App() {
  const [auth, setAuth] = useState({ state: 'checking', problem: null });
  const [page, setPage] = useState(pageOf(location.hash));

  const check = async () => {
    try {
      // Ask for a key only when the gateway has keys; without a stored one, no call is made that would be refused
      // (each refusal counts against this client's wrong-key limit).
      const { keys_required: keysRequired } = (await api('/console/auth')).body;
      if (keysRequired && session.key === null) {
        setAuth({ state: 'out', problem: null });
        return;
      }
      await api(PROBE);
      setAuth({ state: 'in', problem: null });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setAuth({ state: 'out', problem: session.key ? 'Your key was refused; sign in again.' : null });
      else setAuth({ state: 'in', problem: null });
    }
  };
  useEffect(() => {
    check();
    // A key that stops working (removed from the config) sends the tab back to sign-in; no key yet is no problem.
    const off = onUnauthorized(() => {
      const had = session.key !== null;
      session.key = null;
      setAuth({ state: 'out', problem: had ? 'Your key was refused; sign in again.' : null });
    });
    const onHash = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => {
      off();
      removeEventListener('hashchange', onHash);
    };
  }, []);
  useEffect(() => {
    document.title = `${page.title} · Tollgate`;
  }, [page]);

  if (auth.state === 'checking') return html`<main class="signin"><p aria-busy="true">Loading…</p></main>`;
  if (auth.state === 'out') return html`<${SignIn} problem=${auth.problem} onSignedIn=${check} />`;
  const signOut = () => {
    session.key = null;
    setAuth({ state: 'out', problem: null });
  };
  const View = page.view;
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="#/activity">Tollgate</a>
      <nav aria-label="Pages">
        <ul>
          ${PAGES.map((p) => html`<li><a href=${`#/${p.id}`} aria-current=${p.id === page.id ? 'page' : undefined}>${p.title}</a></li>`)}
        </ul>
      </nav>
      <div class="tools">
        <${ThemeToggle} />
        ${session.key ? html`<button type="button" class="ghost" onClick=${signOut}>Sign out</button>` : null}
      </div>
    </header>
    <main id="main" tabindex="-1">
      <h1 class="page-title">${page.title}</h1>
      <${View} key=${page.id} />
    </main>`;
}

applyTheme(sessionStorage.getItem(THEME_ITEM) ?? 'system');
render(html`<${App} />`, document.getElementById('app'));
