// @ts-check
// The overview the dashboard opens on: decisions per minute by effect over the last
// hour (an SVG chart drawn here, as wide as its panel), the agents and actions denied most, the budgets
// nearest their limits and the open reviews. Refreshed while the tab is visible.
import { api, ApiError, describe } from '../api.js';
import { detailsButton } from '../detail.js';
import { failure, h, long, svg, table, time, updatedNow, timeCell } from '../dom.js';
import { policyNames, policyRef } from '../policy-names.js';
import { keyCell } from './budgets.js';
import { budgetUsage } from '../units.js';
import { queueOrder } from './reviews.js';

/** @typedef {import('../api.js').DecisionStats} DecisionStats */
/** @typedef {import('../api.js').Decision} Decision */
/** @typedef {import('../api.js').Budget & { used_fraction: number }} NearBudget */

const REFRESH_MS = 10_000;
const EFFECTS = /** @type {const} */ (['allow', 'review', 'deny']);
const HEIGHT = 200;
const PAD = { left: 40, right: 12, top: 12, bottom: 24 };
/** The chart shows at least this many minutes, from the first with a decision. */
const MIN_SLOTS = 15;
/** The widest a bar gets (px), however few minutes are shown. */
const BAR_MAX = 32;

/**
 * The minutes the chart shows: from the first minute of the hour with a decision
 * to now, at least MIN_SLOTS of them, so that the bars spread over the chart rather
 * than crowd at its right edge when the decisions are recent.
 * Example: `chartMinutes(stats.per_minute).length` -> 15 when every decision is of the last minute
 * @param {DecisionStats['per_minute']} perMinute
 * @returns {DecisionStats['per_minute']}
 */
export function chartMinutes(perMinute) {
  const first = perMinute.findIndex((m) => m.allow + m.deny + m.review > 0);
  const start = first < 0 ? perMinute.length - MIN_SLOTS : Math.min(first, perMinute.length - MIN_SLOTS);
  return perMinute.slice(Math.max(0, start));
}

/**
 * Decisions per minute as stacked bars (allow at the bottom, then review, then
 * deny), one slot per minute shown (chartMinutes), drawn `width` pixels wide (the
 * width of its panel: one SVG unit is one pixel, so the text keeps its size); each
 * bar segment carries its minute, effect and count (data-*) and a title.
 * @param {DecisionStats} stats
 * @param {number} width
 * @returns {SVGElement}
 */
export function minuteChart(stats, width) {
  const minutes = chartMinutes(stats.per_minute);
  const slots = minutes.length;
  const most = Math.max(1, ...minutes.map((m) => m.allow + m.deny + m.review));
  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, slots);
  const barW = Math.min(BAR_MAX, Math.max(1, slot * 0.8));
  /** @type {SVGElement[]} */
  const bars = [];
  minutes.forEach((m, i) => {
    let y = PAD.top + plotH;
    for (const effect of EFFECTS) {
      const count = m[effect];
      if (!count) continue;
      const height = (count / most) * plotH;
      y -= height;
      bars.push(
        svg(
          'rect',
          {
            class: `bar ${effect}`,
            x: (PAD.left + i * slot + (slot - barW) / 2).toFixed(2),
            y: y.toFixed(2),
            width: barW.toFixed(2),
            height: height.toFixed(2),
            'data-minute': m.minute,
            'data-effect': effect,
            'data-count': count,
          },
          svg('title', {}, `${time(m.minute)}: ${count} ${effect}`),
        ),
      );
    }
  });
  const first = minutes[0]?.minute;
  const last = minutes[slots - 1]?.minute;
  return svg(
    'svg',
    {
      id: 'decision-chart',
      class: 'chart',
      width,
      height: HEIGHT,
      viewBox: `0 0 ${width} ${HEIGHT}`,
      role: 'img',
      'aria-label': `Decisions per minute by effect from ${time(first)} to ${time(last)}: ${EFFECTS.map((e) => `${shownTotal(stats, e)} ${e}`).join(', ')} in the ${legendText(stats)}; at most ${most} in a minute`,
      'data-minutes': slots,
    },
    svg('line', { class: 'axis', x1: PAD.left, y1: PAD.top + plotH, x2: width - PAD.right, y2: PAD.top + plotH }),
    svg('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: PAD.top + plotH }),
    svg('text', { class: 'tick', x: PAD.left - 4, y: PAD.top + 10, 'text-anchor': 'end' }, String(most)),
    svg('text', { class: 'tick', x: PAD.left - 4, y: PAD.top + plotH, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'tick', x: PAD.left, y: HEIGHT - 4 }, time(first)),
    svg('text', { class: 'tick', x: width - PAD.right, y: HEIGHT - 4, 'text-anchor': 'end' }, time(last)),
    ...bars,
  );
}

/**
 * What the chart's legend says after its keys: the minutes on the axis, as many
 * and from and to the same minutes as its labels (not the hour the figures were
 * asked for: the chart starts at the first minute with a decision).
 * Example: `legendText(stats)` -> `14 minutes shown, 2026-11-21 10:00:00Z to 2026-11-21 10:13:00Z`
 * @param {DecisionStats} stats
 * @returns {string}
 */
export function legendText(stats) {
  const minutes = chartMinutes(stats.per_minute);
  return `${minutes.length} minutes shown, ${time(minutes[0]?.minute)} to ${time(minutes.at(-1)?.minute)}`;
}

/**
 * The decisions of each effect in the minutes the chart shows.
 * @param {DecisionStats} stats
 * @param {'allow' | 'review' | 'deny'} effect
 * @returns {number}
 */
const shownTotal = (stats, effect) => chartMinutes(stats.per_minute).reduce((n, m) => n + m[effect], 0);

/**
 * A section that shows a failure in place of its content (a key without the scope, say).
 * @param {unknown} e
 * @param {string} what
 */
const unavailable = (e, what) =>
  failure(e instanceof ApiError && e.status === 403 ? `${what}: this key may not read it (${e.code}).` : describe(e));

/**
 * Draws the overview into `root`; answers a function that stops its refreshing.
 * Example: `const stop = overviewView(byId('view'));`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function overviewView(root) {
  const plot = h('div', { id: 'overview-plot' });
  const legend = h('div');
  const chart = h('div', { id: 'overview-chart' }, plot, legend);
  const denied = h('div', { id: 'overview-denied', class: 'columns' });
  const budgets = h('div', { id: 'overview-budgets' });
  const reviews = h('div', { id: 'overview-reviews' });
  const updated = h('p', { class: 'muted', id: 'overview-updated' });
  /** The figures drawn last (drawn again when the panel's width changes). */
  /** @type {DecisionStats | null} */
  let drawn = null;
  let drawnWidth = 0;

  /** Draws the chart as wide as its panel. */
  const drawChart = () => {
    const width = Math.floor(plot.clientWidth);
    if (!drawn || width <= PAD.left + PAD.right) return;
    drawnWidth = width;
    plot.replaceChildren(minuteChart(drawn, width));
  };
  const resized = new ResizeObserver(() => {
    if (Math.floor(plot.clientWidth) !== drawnWidth) drawChart();
  });
  resized.observe(plot);

  const load = async () => {
    const [stats, near, open, names] = await Promise.allSettled([
      api('GET', '/v1/stats/decisions?minutes=60'),
      api('GET', '/v1/stats/budgets?limit=5'),
      api('GET', '/v1/reviews?status=open&limit=100'),
      policyNames(),
    ]);
    const policies = names.status === 'fulfilled' ? names.value : new Map();
    if (stats.status === 'fulfilled') {
      const s = /** @type {DecisionStats} */ (stats.value);
      drawn = s;
      drawChart();
      legend.replaceChildren(
        h(
          'p',
          { class: 'legend' },
          EFFECTS.map((e) => h('span', { class: `key ${e}` }, `${e} ${shownTotal(s, e)}`)),
          ` in the ${legendText(s)}`,
        ),
      );
      denied.replaceChildren(
        s.top_denied_agents.length
          ? table(
              'Agents denied most (last hour)',
              ['Agent', 'Denies'],
              s.top_denied_agents.map((a) =>
                h(
                  'tr',
                  { dataset: { agent: a.agent_id } },
                  h('td', {}, long(a.agent_id)),
                  h('td', {}, String(a.count)),
                ),
              ),
            )
          : h('p', {}, 'No agent was denied in the last hour.'),
        s.top_denied_actions.length
          ? table(
              'Actions denied most (last hour)',
              ['Action', 'Denies'],
              s.top_denied_actions.map((a) =>
                h('tr', { dataset: { action: a.action } }, h('td', {}, long(a.action)), h('td', {}, String(a.count))),
              ),
            )
          : '',
      );
    } else {
      drawn = null;
      plot.replaceChildren(unavailable(stats.reason, 'Decisions'));
      legend.replaceChildren();
      denied.replaceChildren();
    }
    if (near.status === 'fulfilled') {
      const items = /** @type {import('../api.js').Page<NearBudget>} */ (near.value).data;
      budgets.replaceChildren(
        items.length
          ? table(
              { labelledBy: 'overview-budgets-title' },
              ['Policy', 'Counted for', 'Used', 'Resets (UTC)'],
              items.map((b) =>
                h(
                  'tr',
                  {},
                  h('td', {}, policyRef(b.policy_id, policies)),
                  keyCell(b),
                  h(
                    'td',
                    {},
                    h('meter', {
                      min: 0,
                      max: 1,
                      value: Math.min(1, b.used_fraction),
                      high: b.threshold_alert ?? 0.8,
                      optimum: 0,
                      'aria-label': `${Math.round(b.used_fraction * 100)}% used`,
                    }),
                    ` ${Math.round(b.used_fraction * 100)}% (${budgetUsage(b)})`,
                  ),
                  timeCell(b.period_resets_at),
                ),
              ),
            )
          : h('p', {}, 'No budget has been used this period.'),
      );
    } else budgets.replaceChildren(unavailable(near.reason, 'Budgets'));
    if (open.status === 'fulfilled') {
      const page = /** @type {import('../api.js').Page<Decision>} */ (open.value);
      const { waiting, afterwards } = queueOrder(page.data);
      const first = [...waiting, ...afterwards].slice(0, 5);
      const more = page.data.length - first.length;
      reviews.replaceChildren(
        first.length
          ? table(
              { labelledBy: 'overview-reviews-title' },
              ['Asked (UTC)', 'Agent', 'Action', 'Policy', 'The agent', ''],
              first.map((d) =>
                h(
                  'tr',
                  { dataset: { id: d.id } },
                  timeCell(d.evaluated_at),
                  h('td', {}, long(d.agent_id)),
                  h('td', {}, long(d.action)),
                  h('td', {}, policyRef(d.policy_id, policies)),
                  h(
                    'td',
                    {},
                    d.status === 'awaiting_approval'
                      ? `waits until ${time(d.approval_expires_at)}`
                      : 'already allowed (after the fact)',
                  ),
                  h('td', {}, detailsButton(d.id)),
                ),
              ),
            )
          : h('p', {}, 'No review is waiting.'),
        h(
          'p',
          {},
          `${more > 0 || page.has_more ? `${more}${page.has_more ? '+' : ''} more. ` : ''}`,
          h('a', { href: '#reviews' }, 'All reviews'),
        ),
      );
    } else reviews.replaceChildren(unavailable(open.reason, 'Reviews'));
    updated.textContent = updatedNow();
  };

  root.replaceChildren(
    h('h2', {}, 'Overview'),
    updated,
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'overview-chart-title' },
      h('h3', { id: 'overview-chart-title' }, 'Decisions per minute'),
      chart,
    ),
    h(
      'section',
      { 'aria-labelledby': 'overview-denied-title' },
      h('h3', { id: 'overview-denied-title' }, 'Denied most'),
      denied,
    ),
    h(
      'section',
      { 'aria-labelledby': 'overview-budgets-title' },
      h('h3', { id: 'overview-budgets-title' }, 'Budgets nearest their limits'),
      budgets,
    ),
    h(
      'section',
      { 'aria-labelledby': 'overview-reviews-title' },
      h('h3', { id: 'overview-reviews-title' }, 'Open reviews, agents waiting first'),
      reviews,
    ),
  );
  load();
  const timer = setInterval(() => {
    if (!document.hidden) load().catch(() => {});
  }, REFRESH_MS);
  return () => {
    clearInterval(timer);
    resized.disconnect();
  };
}
