/** lint.shadow_duplicate: a shadow policy that decides exactly like an enabled one (it can never show a divergence). */
import { describe, expect, it } from 'vitest';
import { compileSources } from '../../../compiler/compile.js';

const lint = (text: string) =>
  compileSources([{ file: 'p.yaml', text }])
    .diagnostics.filter((d) => d.code === 'lint.shadow_duplicate')
    .map((d) => ({ line: d.line, severity: d.severity, message: d.message }));

const ENABLED = `policies:
  - name: reads
    description: the live one
    effect: allow
    agents: [bot-1, bot-2]
    actions: [orders.read, orders.list]
    condition: "amount <= 5 && context.tier == 'gold'"
    budget: { unit: calls, limit: 10, period: daily }
`;

describe('lint.shadow_duplicate', () => {
  it('flags a shadow copy that differs only in id, name, description, list order and condition spacing', () => {
    const text = `${ENABLED}  - name: reads-v2
    description: trying it
    state: shadow
    effect: allow
    agents: [bot-2, bot-1, bot-1]
    actions: [orders.list, orders.read]
    condition: "(amount<=5) && (context.tier == 'gold')"
    budget: { unit: calls, limit: 10, period: daily }
`;
    expect(lint(text)).toEqual([
      {
        line: 9,
        severity: 'warning',
        message: expect.stringMatching(
          /^shadow policy pol_reads_v2 is identical to enabled policy pol_reads .*can never differ/,
        ),
      },
    ]);
    // --strict turns it into an error, like every lint.
    expect(compileSources([{ file: 'p.yaml', text }], { strict: true }).table).toBeUndefined();
  });

  it('says so when only the budget or rate limit differs (shadow evaluation applies neither)', () => {
    const text = `${ENABLED}  - { name: reads-v2, state: shadow, effect: allow, agents: [bot-1, bot-2], actions: [orders.read, orders.list], condition: "amount <= 5 && context.tier == 'gold'", budget: { unit: calls, limit: 99, period: daily } }\n`;
    expect(lint(text)).toEqual([
      { line: 9, severity: 'warning', message: expect.stringContaining('only in rate_limit or budget') },
    ]);
  });

  it.each([
    ['the priority', 'priority: 5'],
    ['the effect', 'effect: deny'],
    ['the agents', 'agents: [bot-1]'],
    ['the resources', 'resources: ["order:*"]'],
    ['the condition', 'condition: "amount <= 6 && context.tier == \'gold\'"'],
  ])('leaves alone a shadow policy that differs in %s', (_, change) => {
    const base: Record<string, string> = {
      effect: 'effect: allow',
      agents: 'agents: [bot-1, bot-2]',
      condition: 'condition: "amount <= 5 && context.tier == \'gold\'"',
    };
    const key = change.split(':')[0]!;
    const fields = { ...base, [key]: change };
    const text = `${ENABLED}  - name: reads-v2\n    state: shadow\n    actions: [orders.read, orders.list]\n    budget: { unit: calls, limit: 10, period: daily }\n${Object.values(
      fields,
    )
      .map((f) => `    ${f}\n`)
      .join('')}`;
    expect(compileSources([{ file: 'p.yaml', text }]).diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(lint(text)).toEqual([]);
  });

  it('compares with enabled policies only (a disabled twin is no reason)', () => {
    const disabled = ENABLED.replace('    effect: allow', '    state: disabled\n    effect: allow');
    const text = `${disabled}  - { name: reads-v2, state: shadow, effect: allow, agents: [bot-1, bot-2], actions: [orders.read, orders.list], condition: "amount <= 5 && context.tier == 'gold'", budget: { unit: calls, limit: 10, period: daily } }\n`;
    expect(lint(text)).toEqual([]);
  });
});
