// agent-authz dashboard: a plain ES module over the public /v1 API. The API key is
// kept in sessionStorage (this tab only) and sent as a bearer token; it never
// appears in a URL. Every value from the API reaches the page as text nodes
// (no innerHTML), and the page's CSP allows scripts from this origin only.

const KEY_STORE = 'agent-authz.api-key';
const POLL_MS = 2000;
const REASONS = ['policy.matched', 'policy.not_found', 'policy.disabled', 'resource.not_allowed', 'budget.exceeded', 'agent.revoked'];
const EDITABLE_OMIT = ['object', 'livemode', 'created_at', 'updated_at'];

const $ = (id) => document.getElementById(id);
const view = $('view');
let stopView = () => {};

// ---- DOM ----------------------------------------------------------------------

/** h('button', { type: 'button', onclick }, 'text', child...) */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

const time = (iso) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');

function table(caption, headers, rows) {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows),
  );
}

function say(message, kind = 'info') {
  const s = $('status');
  s.textContent = message;
  s.className = kind;
}

// ---- API ----------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'unknown';
    this.details = error?.details ?? [];
  }
}

async function api(method, path, { body, contentType = 'application/json', accept = 'application/json' } = {}) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(KEY_STORE) ?? ''}`, accept };
  if (body !== undefined) headers['content-type'] = contentType;
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('json');
  const data = isJson && text ? JSON.parse(text) : text;
  if (!response.ok) {
    const error = new ApiError(response.status, isJson ? data.error : undefined);
    if (response.status === 401 && error.code === 'auth.invalid_key') signOut('The API key was refused (revoked or unknown); sign in again.');
    throw error;
  }
  return data;
}

const describe = (e) => (e instanceof ApiError ? `${e.code}: ${e.message}` : String(e?.message ?? e));
/** An error in place of a view's content. */
const failure = (e) => h('p', { class: 'error' }, describe(e));
/** An API error's details as diagnostics, or the error itself as one. */
const problemsOf = (e) => (e.details?.length ? e.details : [{ severity: 'error', message: describe(e) }]);

// ---- session ------------------------------------------------------------------

function signedIn() {
  return Boolean(sessionStorage.getItem(KEY_STORE));
}

function showSession() {
  const key = sessionStorage.getItem(KEY_STORE) ?? '';
  const on = Boolean(key);
  $('sign-in').hidden = on;
  $('nav').hidden = !on;
  $('session').hidden = !on;
  $('environment').textContent = key.startsWith('svc_live_') ? 'live environment' : 'test environment';
  $('environment').className = key.startsWith('svc_live_') ? 'badge live' : 'badge';
}

function signOut(message) {
  sessionStorage.removeItem(KEY_STORE);
  stopView();
  view.replaceChildren();
  showSession();
  $('sign-in-error').textContent = message ?? '';
  $('api-key').focus();
}

$('sign-in').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = $('api-key').value.trim();
  $('sign-in-error').textContent = '';
  if (!/^svc_(test|live)_sk_[A-Za-z0-9]{32,}$/.test(key)) {
    $('sign-in-error').textContent = 'That is not an API key: it starts with svc_test_sk_ or svc_live_sk_.';
    return;
  }
  sessionStorage.setItem(KEY_STORE, key);
  try {
    await api('GET', '/v1/decisions?limit=1');
  } catch (e) {
    // 403: a key without decisions:read is still a key; only 401 refuses it.
    if (!(e instanceof ApiError && e.status === 403)) {
      sessionStorage.removeItem(KEY_STORE);
      showSession();
      $('sign-in-error').textContent = `Sign-in failed: ${describe(e)}`;
      return;
    }
  }
  $('api-key').value = '';
  showSession();
  route();
});

$('sign-out').addEventListener('click', () => signOut('Signed out.'));

// ---- a paged list ---------------------------------------------------------------

/** Loads pages of a list endpoint; `more()` appends the next page. `idOf` names the cursor field. */
function pager(path, limit = 50, idOf = (item) => item.id) {
  const items = [];
  let hasMore = false;
  const sep = path.includes('?') ? '&' : '?';
  return {
    items,
    get hasMore() {
      return hasMore;
    },
    async first() {
      const page = await api('GET', `${path}${sep}limit=${limit}`);
      items.splice(0, items.length, ...page.data);
      hasMore = page.has_more;
    },
    async more() {
      const last = items[items.length - 1];
      const page = await api('GET', `${path}${sep}limit=${limit}${last ? `&starting_after=${encodeURIComponent(idOf(last))}` : ''}`);
      items.push(...page.data);
      hasMore = page.has_more;
    },
    /** Newest items not shown yet, put on top (the list is newest first). */
    async refresh() {
      const page = await api('GET', `${path}${sep}limit=${limit}`);
      const shown = new Set(items.map(idOf));
      const fresh = [];
      for (const item of page.data) {
        if (shown.has(idOf(item))) break;
        fresh.push(item);
      }
      items.unshift(...fresh);
      return fresh.length;
    },
  };
}

function moreButton(list, render) {
  if (!list.hasMore) return '';
  return h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await list.more();
        render();
      } catch (e) {
        say(describe(e), 'error');
      }
    },
  }, 'Load older');
}

// ---- decisions ------------------------------------------------------------------

function decisionsView() {
  const agent = h('input', { id: 'filter-agent', type: 'search', autocomplete: 'off' });
  const effect = h('select', { id: 'filter-effect' }, h('option', { value: '' }, 'any'), ['allow', 'deny', 'review'].map((e) => h('option', { value: e }, e)));
  const reason = h('select', { id: 'filter-reason' }, h('option', { value: '' }, 'any'), REASONS.map((r) => h('option', { value: r }, r)));
  const live = h('input', { id: 'live', type: 'checkbox', checked: true });
  const updated = h('p', { class: 'muted', id: 'decisions-updated' });
  const body = h('div');
  let list;

  const render = () => {
    const rows = list.items.map((d) =>
      h('tr', { dataset: { id: d.id } },
        h('td', { class: 'time' }, time(d.evaluated_at)),
        h('td', {}, d.agent_id),
        h('td', {}, d.action),
        h('td', {}, d.resource ?? '—'),
        h('td', {}, h('span', { class: `effect ${d.effect}` }, d.effect)),
        h('td', {}, d.reason),
        h('td', {}, d.policy_id ?? '—'),
        h('td', {}, d.status),
        h('td', { class: 'mono' }, d.id),
      ),
    );
    body.replaceChildren(
      list.items.length ? table('Decisions, newest first', ['Time (UTC)', 'Agent', 'Action', 'Resource', 'Effect', 'Reason', 'Policy', 'Status', 'Id'], rows) : h('p', {}, 'No decisions match.'),
      moreButton(list, render),
    );
  };

  const load = async () => {
    const q = new URLSearchParams();
    if (agent.value.trim()) q.set('agent_id', agent.value.trim());
    if (effect.value) q.set('effect', effect.value);
    if (reason.value) q.set('reason', reason.value);
    const mine = pager(`/v1/decisions${q.size ? `?${q}` : ''}`);
    list = mine;
    try {
      await mine.first();
      // A newer filter was chosen meanwhile: its own load renders.
      if (list !== mine) return;
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      render();
    } catch (e) {
      if (list === mine) body.replaceChildren(failure(e));
    }
  };

  const form = h('form', { class: 'filters', onsubmit: (e) => (e.preventDefault(), load()) },
    h('label', { for: 'filter-agent' }, 'Agent'), agent,
    h('label', { for: 'filter-effect' }, 'Effect'), effect,
    h('label', { for: 'filter-reason' }, 'Reason'), reason,
    h('button', { type: 'submit' }, 'Filter'),
    h('label', { class: 'inline' }, live, ' Live'),
  );
  effect.addEventListener('change', load);
  reason.addEventListener('change', load);

  const timer = setInterval(async () => {
    if (!live.checked || document.hidden || !list) return;
    const current = list;
    try {
      if ((await current.refresh()) && list === current) render();
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch {
      /* the next tick tries again; a refused key signs out in api() */
    }
  }, POLL_MS);

  view.replaceChildren(h('h2', {}, 'Decisions'), form, updated, body);
  load();
  return () => clearInterval(timer);
}

// ---- policies -------------------------------------------------------------------

function editable(policy) {
  const copy = { ...policy };
  for (const k of EDITABLE_OMIT) delete copy[k];
  return copy;
}

function diagnosticsList(diagnostics) {
  if (!diagnostics.length) return h('p', { class: 'ok' }, 'No problems found.');
  return h('ul', { class: 'diagnostics' }, diagnostics.map((d) => {
    const where = d.line ? `line ${d.line}, column ${d.column ?? 1}` : d.path ?? '/';
    return h('li', { class: d.severity === 'warning' ? 'warning' : 'error' }, `${where}: ${d.severity ?? 'error'}: ${d.message}`);
  }));
}

function policiesView() {
  const body = h('div');
  const detail = h('section', { id: 'policy-detail', 'aria-label': 'Policy' });
  const list = pager('/v1/policies', 100);

  const setState = async (p, state) => {
    try {
      const current = await api('GET', `/v1/policies/${encodeURIComponent(p.id)}`);
      await api('PUT', `/v1/policies/${encodeURIComponent(p.id)}`, { body: { ...editable(current), state } });
      say(`Policy ${p.name} ${state}.`);
      await list.first();
      render();
    } catch (e) {
      say(`Could not change ${p.name}: ${describe(e)}`, 'error');
    }
  };

  const open = async (p) => {
    let yaml;
    try {
      yaml = await api('GET', `/v1/policies/${encodeURIComponent(p.id)}`, { accept: 'application/yaml' });
    } catch (e) {
      say(describe(e), 'error');
      return;
    }
    const area = h('textarea', { id: 'policy-yaml', rows: 18, spellcheck: 'false' }, yaml);
    const problems = h('div', { id: 'policy-diagnostics', 'aria-live': 'polite' });
    const check = async () => {
      try {
        const r = await api('POST', '/v1/policies/validate', { body: area.value, contentType: 'application/yaml' });
        problems.replaceChildren(h('h4', {}, r.valid ? 'Valid' : 'Invalid'), diagnosticsList(r.diagnostics));
      } catch (e) {
        problems.replaceChildren(h('h4', {}, 'Invalid'), diagnosticsList(problemsOf(e)));
      }
    };
    const save = async () => {
      try {
        await api('PUT', `/v1/policies/${encodeURIComponent(p.id)}`, { body: area.value, contentType: 'application/yaml' });
        say(`Policy ${p.name} saved.`);
        await list.first();
        render();
        await check();
      } catch (e) {
        problems.replaceChildren(h('h4', {}, 'Not saved'), diagnosticsList(problemsOf(e)));
      }
    };
    detail.replaceChildren(
      h('h3', {}, `Policy ${p.name}`),
      h('label', { for: 'policy-yaml' }, 'YAML'),
      area,
      h('div', { class: 'actions' }, h('button', { type: 'button', onclick: check }, 'Validate'), h('button', { type: 'button', onclick: save }, 'Save')),
      problems,
    );
    await check();
    area.focus();
  };

  const render = () => {
    const rows = list.items.map((p) =>
      h('tr', { dataset: { id: p.id, name: p.name } },
        h('th', { scope: 'row' }, p.name),
        h('td', { class: 'mono' }, p.id),
        h('td', {}, h('span', { class: `effect ${p.effect}` }, p.effect)),
        h('td', {}, p.priority ?? '—'),
        h('td', {}, (p.actions ?? []).join(', ')),
        h('td', {}, h('span', { class: `state ${p.state}` }, p.state)),
        h('td', { class: 'time' }, time(p.updated_at)),
        h('td', { class: 'actions' },
          p.state === 'enabled'
            ? h('button', { type: 'button', onclick: () => setState(p, 'disabled'), 'aria-label': `Disable ${p.name}` }, 'Disable')
            : h('button', { type: 'button', onclick: () => setState(p, 'enabled'), 'aria-label': `Enable ${p.name}` }, 'Enable'),
          h('button', { type: 'button', onclick: () => open(p), 'aria-label': `YAML of ${p.name}` }, 'YAML'),
        ),
      ),
    );
    body.replaceChildren(
      list.items.length ? table('Policies', ['Name', 'Id', 'Effect', 'Priority', 'Actions', 'State', 'Updated (UTC)', ''], rows) : h('p', {}, 'No policies in this environment.'),
      moreButton(list, render),
    );
  };

  view.replaceChildren(h('h2', {}, 'Policies'), body, detail);
  list.first().then(render, (e) => body.replaceChildren(failure(e)));
  return () => {};
}

// ---- agents ---------------------------------------------------------------------

function agentsView() {
  const body = h('div');
  // Agents are paged by agent_id (they have no `id` field).
  const list = pager('/v1/agents', 50, (a) => a.agent_id);

  const setStatus = async (a, verb) => {
    try {
      const updated = await api('POST', `/v1/agents/${encodeURIComponent(a.agent_id)}/${verb}`);
      Object.assign(a, updated);
      say(`Agent ${a.agent_id} ${updated.status === 'revoked' ? 'revoked' : 'restored'}.`);
      render();
    } catch (e) {
      say(`Could not ${verb} ${a.agent_id}: ${describe(e)}`, 'error');
    }
  };

  const render = () => {
    const rows = list.items.map((a) =>
      h('tr', { dataset: { agent: a.agent_id } },
        h('th', { scope: 'row' }, a.agent_id),
        h('td', {}, h('span', { class: `state ${a.status}` }, a.status)),
        h('td', { class: 'time' }, time(a.first_seen_at)),
        h('td', { class: 'time' }, time(a.revoked_at)),
        h('td', { class: 'actions' },
          a.status === 'revoked'
            ? h('button', { type: 'button', onclick: () => setStatus(a, 'restore'), 'aria-label': `Restore ${a.agent_id}` }, 'Restore')
            : h('button', { type: 'button', onclick: () => setStatus(a, 'revoke'), 'aria-label': `Revoke ${a.agent_id}` }, 'Revoke'),
        ),
      ),
    );
    body.replaceChildren(
      list.items.length ? table('Agents', ['Agent', 'Status', 'First seen (UTC)', 'Revoked (UTC)', ''], rows) : h('p', {}, 'No agent has made a request in this environment yet.'),
      moreButton(list, render),
    );
  };

  view.replaceChildren(h('h2', {}, 'Agents'), body);
  list.first().then(render, (e) => body.replaceChildren(failure(e)));
  return () => {};
}

// ---- budgets --------------------------------------------------------------------

function budgetsView() {
  const body = h('div');
  const render = (items) => {
    const rows = items.map((b) => {
      const used = b.consumed + b.held;
      return h('tr', {},
        h('td', { class: 'mono' }, b.policy_id),
        h('td', {}, b.agent_id),
        h('td', {}, h('meter', { min: 0, max: b.limit, value: Math.min(used, b.limit), high: (b.threshold_alert ?? 0.8) * b.limit, optimum: 0, 'aria-label': `${used} of ${b.limit} ${b.unit}` }),
          ` ${b.consumed} consumed + ${b.held} held of ${b.limit} ${b.unit}`),
        h('td', {}, b.period),
        h('td', { class: 'time' }, time(b.period_resets_at)),
        h('td', {}, h('span', { class: `state ${b.status}` }, b.status)),
      );
    });
    body.replaceChildren(items.length ? table('Budget usage this period', ['Policy', 'Agent', 'Usage', 'Period', 'Period ends (UTC)', 'Status'], rows) : h('p', {}, 'No budget has been used this period.'));
  };
  view.replaceChildren(h('h2', {}, 'Budgets'), body);
  api('GET', '/v1/budgets?limit=100').then((page) => render(page.data), (e) => body.replaceChildren(failure(e)));
  return () => {};
}

// ---- webhooks -------------------------------------------------------------------

function attemptsHistory(d) {
  if (!d.attempts.length) return 'not attempted yet';
  return h('details', {},
    h('summary', {}, `${d.attempts.length} attempt${d.attempts.length === 1 ? '' : 's'}`),
    h('ol', {}, d.attempts.map((a) =>
      h('li', {}, `${time(a.started_at)}: ${a.status_code ?? 'no answer'}${a.error ? ` (${a.error})` : ''}, ${a.duration_ms ?? '?'} ms${a.next_attempt_at ? `; next ${time(a.next_attempt_at)}` : ''}`),
    )),
  );
}

function webhooksView() {
  const body = h('div');
  const deliveries = h('section', { id: 'deliveries', 'aria-label': 'Deliveries' });
  const endpoints = pager('/v1/webhooks');

  const showDeliveries = async (endpoint) => {
    const list = pager(`/v1/webhooks/${encodeURIComponent(endpoint.id)}/deliveries`);
    const render = () => {
      const rows = list.items.map((d) =>
        h('tr', { dataset: { id: d.id, status: d.status } },
          h('td', { class: 'time' }, time(d.created_at)),
          h('td', {}, d.event_type),
          h('td', { class: 'mono' }, d.event_id),
          h('td', {}, h('span', { class: `state ${d.status}` }, d.status)),
          h('td', {}, d.status_code ?? '—'),
          h('td', {}, d.error ?? '—'),
          h('td', { class: 'time' }, time(d.next_attempt_at)),
          h('td', {}, attemptsHistory(d)),
          h('td', {}, d.replay_of ? `replay of ${d.replay_of}` : ''),
          h('td', { class: 'actions' }, h('button', { type: 'button', onclick: () => replay(d), 'aria-label': `Replay ${d.id}` }, 'Replay')),
        ),
      );
      deliveries.replaceChildren(
        h('h3', {}, `Deliveries to ${endpoint.url}`),
        h('button', { type: 'button', onclick: () => showDeliveries(endpoint) }, 'Refresh'),
        list.items.length
          ? table('Deliveries, newest first', ['Created (UTC)', 'Event', 'Event id', 'Status', 'HTTP', 'Error', 'Next attempt (UTC)', 'History', '', ''], rows)
          : h('p', {}, 'No deliveries yet.'),
        moreButton(list, render),
      );
    };
    const replay = async (d) => {
      try {
        const copy = await api('POST', `/v1/webhooks/${encodeURIComponent(endpoint.id)}/deliveries/${encodeURIComponent(d.id)}/replay`);
        say(`Delivery ${d.id} replayed as ${copy.id}.`);
        await list.first();
        render();
      } catch (e) {
        say(`Could not replay ${d.id}: ${describe(e)}`, 'error');
      }
    };
    try {
      await list.first();
      render();
    } catch (e) {
      deliveries.replaceChildren(failure(e));
    }
  };

  const render = () => {
    const rows = endpoints.items.map((w) =>
      h('tr', { dataset: { id: w.id } },
        h('th', { scope: 'row' }, w.url),
        h('td', {}, w.events.join(', ')),
        h('td', {}, h('span', { class: `state ${w.status}` }, w.status)),
        h('td', {}, w.description ?? ''),
        h('td', { class: 'actions' }, h('button', { type: 'button', onclick: () => showDeliveries(w), 'aria-label': `Deliveries of ${w.url}` }, 'Deliveries')),
      ),
    );
    body.replaceChildren(
      endpoints.items.length ? table('Webhook endpoints', ['URL', 'Events', 'Status', 'Description', ''], rows) : h('p', {}, 'No webhook endpoints (create one with POST /v1/webhooks).'),
      moreButton(endpoints, render),
    );
  };

  view.replaceChildren(h('h2', {}, 'Webhooks'), body, deliveries);
  endpoints.first().then(render, (e) => body.replaceChildren(failure(e)));
  return () => {};
}

// ---- routing --------------------------------------------------------------------

const VIEWS = { decisions: decisionsView, policies: policiesView, agents: agentsView, budgets: budgetsView, webhooks: webhooksView };

function route() {
  stopView();
  stopView = () => {};
  if (!signedIn()) {
    showSession();
    $('api-key').focus();
    return;
  }
  const name = location.hash.slice(1) in VIEWS ? location.hash.slice(1) : 'decisions';
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  say('');
  stopView = VIEWS[name]();
  document.title = `${name[0].toUpperCase()}${name.slice(1)} · agent-authz`;
}

window.addEventListener('hashchange', route);
showSession();
route();
