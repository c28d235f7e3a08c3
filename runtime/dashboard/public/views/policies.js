// @ts-check
// Policies: the list in the order they win (priority, then deny before review
// before allow) with what each applies to (agents, actions, resources, condition),
// enable/disable, and one policy's YAML with its diagnostics, validated and saved
// through the API.
import { api, describe, problemsOf } from '../api.js';
import { failure, h, long, say, table, timeCell } from '../dom.js';
import { readAll } from '../list.js';
import { forgetPolicyNames } from '../policy-names.js';

/** @typedef {import('../api.js').Policy} Policy */
/** @typedef {import('../api.js').Diagnostic} Diagnostic */
/** @typedef {import('../api.js').Validation} Validation */

/** Fields of a policy answer that a PUT does not take back. */
const EDITABLE_OMIT = ['object', 'livemode', 'created_at', 'updated_at'];

/**
 * A policy answer as a PUT body: without its read-only fields.
 * @param {Record<string, unknown>} policy
 * @returns {Record<string, unknown>}
 */
function editable(policy) {
  const copy = { ...policy };
  for (const k of EDITABLE_OMIT) delete copy[k];
  return copy;
}

/**
 * Diagnostics as a list (`line 3, column 5: error: ...`, with the code when there
 * is one: `line 1, column 1: warning: lint.conflict: ...`), or "No problems found."
 * @param {Diagnostic[]} diagnostics
 * @returns {HTMLElement}
 */
function diagnosticsList(diagnostics) {
  if (!diagnostics.length) return h('p', { class: 'ok' }, 'No problems found.');
  return h(
    'ul',
    { class: 'diagnostics' },
    diagnostics.map((d) => {
      const where = d.line ? `line ${d.line}, column ${d.column ?? 1}` : (d.path ?? '/');
      return h(
        'li',
        { class: d.severity === 'warning' ? 'warning' : 'error' },
        `${where}: ${d.severity ?? 'error'}: ${d.code ? `${d.code}: ` : ''}${d.message}`,
      );
    }),
  );
}

/** At equal priority deny beats review beats allow (docs/policies.md#how-a-request-is-decided). */
const EFFECT_RANK = { deny: 0, review: 1, allow: 2 };
/** Policies read at most. */
const CAP = 10_000;

/**
 * Policies in the order they win: lowest priority number first, then deny, review,
 * allow, then by name.
 * Example: `byPriority(policies)[0]` is the policy a conflict is decided by first
 * @param {Policy[]} policies
 * @returns {Policy[]}
 */
export function byPriority(policies) {
  return [...policies].sort(
    (a, b) =>
      (a.priority ?? 100) - (b.priority ?? 100) ||
      EFFECT_RANK[a.effect] - EFFECT_RANK[b.effect] ||
      a.name.localeCompare(b.name),
  );
}

/**
 * A list of globs or patterns as a cell's content, one per line; absent: what that
 * means (`any agent`), muted.
 * @param {string[] | undefined} values
 * @param {string} absent
 * @returns {HTMLElement}
 */
function patterns(values, absent) {
  if (!values?.length) return h('span', { class: 'muted' }, absent);
  return h(
    'ul',
    { class: 'plain' },
    values.map((v) => h('li', {}, long(v))),
  );
}

/**
 * Draws the policies view into `root`; answers a function that stops it (nothing to stop).
 * Example: `const stop = policiesView(byId('view'));`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function policiesView(root) {
  const body = h('div');
  /** The open YAML editor (its own table row, under the row of its policy), and which policy it is for. */
  const detail = h('section', { id: 'policy-detail', 'aria-label': 'Policy' });
  /** @type {string | null} */
  let openId = null;
  const list = {
    /** @type {Policy[]} */
    items: [],
    truncated: false,
    async first() {
      const read = await readAll('/v1/policies', (/** @type {Policy} */ p) => p.id, CAP);
      this.items = byPriority(/** @type {Policy[]} */ (read.items));
      this.truncated = read.truncated;
    },
  };
  /** @param {string} id */
  const url = (id) => `/v1/policies/${encodeURIComponent(id)}`;

  /**
   * @param {Policy} p
   * @param {'enabled' | 'disabled'} state
   */
  const setState = async (p, state) => {
    try {
      const current = /** @type {Record<string, unknown>} */ (await api('GET', url(p.id)));
      await api('PUT', url(p.id), { body: { ...editable(current), state } });
      forgetPolicyNames();
      say(`Policy ${p.name} ${state}.`);
      await list.first();
      render();
    } catch (e) {
      say(`Could not change ${p.name}: ${describe(e)}`, 'error');
    }
  };

  /** @param {Policy} p */
  const open = async (p) => {
    let yaml;
    try {
      yaml = /** @type {string} */ (await api('GET', url(p.id), { accept: 'application/yaml' }));
    } catch (e) {
      say(describe(e), 'error');
      return;
    }
    const area = h('textarea', { id: 'policy-yaml', rows: 18, spellcheck: 'false' }, yaml);
    const problems = h('div', { id: 'policy-diagnostics', 'aria-live': 'polite' });
    const check = async () => {
      try {
        const r = /** @type {Validation} */ (
          await api('POST', '/v1/policies/validate', { body: area.value, contentType: 'application/yaml' })
        );
        problems.replaceChildren(h('h4', {}, r.valid ? 'Valid' : 'Invalid'), diagnosticsList(r.diagnostics));
      } catch (e) {
        problems.replaceChildren(h('h4', {}, 'Invalid'), diagnosticsList(problemsOf(e)));
      }
    };
    const save = async () => {
      try {
        await api('PUT', url(p.id), { body: area.value, contentType: 'application/yaml' });
        forgetPolicyNames();
        say(`Policy ${p.name} saved.`);
        await list.first();
        render();
        await check();
      } catch (e) {
        problems.replaceChildren(h('h4', {}, 'Not saved'), diagnosticsList(problemsOf(e)));
      }
    };
    const close = () => {
      openId = null;
      detail.replaceChildren();
      render();
      /** @type {HTMLElement | null} */ (
        body.querySelector(`button[aria-label="YAML of ${CSS.escape(p.name)}"]`)
      )?.focus();
    };
    detail.replaceChildren(
      h('h3', {}, `Policy ${p.name}`),
      h('label', { for: 'policy-yaml' }, 'YAML'),
      area,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', onclick: check }, 'Validate'),
        h('button', { type: 'button', onclick: save }, 'Save'),
        h('button', { type: 'button', onclick: close }, 'Close'),
      ),
      problems,
    );
    openId = p.id;
    render();
    await check();
    area.focus();
  };

  const render = () => {
    const rows = list.items.map((p) =>
      h(
        'tr',
        { dataset: { id: p.id, name: p.name } },
        h('td', {}, p.priority ?? 100),
        h('th', { scope: 'row' }, long(p.name), h('span', { class: 'mono muted policy-id' }, long(p.id))),
        h('td', {}, h('span', { class: `effect ${p.effect}` }, p.effect)),
        h('td', {}, patterns(p.agents, 'any agent')),
        h('td', {}, patterns(p.actions, 'any action')),
        h('td', {}, patterns(p.resources, 'any resource')),
        h(
          'td',
          {},
          p.condition ? h('code', { class: 'condition' }, long(p.condition)) : h('span', { class: 'muted' }, 'none'),
        ),
        h('td', {}, h('span', { class: `state ${p.state}` }, p.state)),
        timeCell(p.updated_at),
        h(
          'td',
          { class: 'actions' },
          h(
            'div',
            { class: 'buttons' },
            p.state === 'enabled'
              ? h(
                  'button',
                  { type: 'button', onclick: () => setState(p, 'disabled'), 'aria-label': `Disable ${p.name}` },
                  'Disable',
                )
              : h(
                  'button',
                  { type: 'button', onclick: () => setState(p, 'enabled'), 'aria-label': `Enable ${p.name}` },
                  'Enable',
                ),
            h(
              'button',
              {
                type: 'button',
                onclick: () => open(p),
                'aria-label': `YAML of ${p.name}`,
                'aria-expanded': String(p.id === openId),
              },
              'YAML',
            ),
          ),
        ),
      ),
    );
    // The open editor: a row of its own right under its policy's row.
    const at = openId === null ? -1 : list.items.findIndex((p) => p.id === openId);
    if (at >= 0) rows.splice(at + 1, 0, h('tr', { class: 'editor' }, h('td', { colspan: 10 }, detail)));
    body.replaceChildren(
      list.items.length
        ? table(
            'Policies in the order they win: priority (lowest first), then deny, review, allow',
            [
              'Priority',
              'Name and id',
              'Effect',
              'Agents',
              'Actions',
              'Resources',
              'Condition',
              'State',
              'Updated (UTC)',
              '',
            ],
            rows,
          )
        : h('p', {}, 'No policies in this environment.'),
      list.truncated ? h('p', { class: 'muted' }, `Showing the first ${CAP} policies only.`) : '',
    );
  };

  root.replaceChildren(h('h2', {}, 'Policies'), body);
  list.first().then(render, (e) => body.replaceChildren(failure(describe(e))));
  return () => {};
}
