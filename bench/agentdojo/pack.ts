/**
 * The AgentDojo policy pack, built from the tool classification alone (never
 * from the tasks): reading untrusted content labels the session `untrusted`,
 * reading the user's private data labels it `private`, and an exit (money
 * moved, content sent, access changed) is held for review once the session's
 * labels meet the pack's rule. Two rules, two packs:
 *
 * - `untrusted-exit`: an exit after any untrusted read waits for a human;
 * - `trifecta`: only an exit after both a private and an untrusted read does
 *   (the lethal trifecta: private data, untrusted content, a way out).
 *
 * Every other tool of the suite is allowed. Actions are `<suite>.<tool>`, for
 * the agents `agentdojo-*` (the replay's agent is `agentdojo-agent`), so the
 * pack loaded beside other policy sets (examples/) governs no one else.
 */
import type { Suite } from './traces.js';

/** The agents the pack governs. */
export const AGENTS = 'agentdojo-*';

export type PackRule = 'untrusted-exit' | 'trifecta';
export const PACK_RULES: readonly PackRule[] = ['untrusted-exit', 'trifecta'];

/** The condition under which an exit waits for review. */
export const RULE_CONDITION: Record<PackRule, string> = {
  'untrusted-exit': "contains(session.labels, 'untrusted')",
  trifecta: "contains(session.labels, 'private') && contains(session.labels, 'untrusted')",
};

/** The labels a tool's results carry, from its classification. */
export function toolLabels(tool: { reads_untrusted: boolean; reads_private: boolean }): string[] {
  return [...(tool.reads_private ? ['private'] : []), ...(tool.reads_untrusted ? ['untrusted'] : [])];
}

const list = (xs: readonly string[]) => `[${xs.join(', ')}]`;

/** The pack for one suite as a policy file (YAML text). */
export function suitePack(name: string, suite: Suite, rule: PackRule): string {
  const tools = Object.keys(suite.tools).sort();
  const exits = tools.filter((t) => suite.tools[t]!.is_exit);
  // One allow policy per distinct label set: the policy a read wins carries its labels.
  const byLabels = new Map<string, string[]>();
  for (const t of tools) {
    const labels = toolLabels(suite.tools[t]!);
    if (labels.length === 0) continue;
    const key = labels.join(',');
    byLabels.set(key, [...(byLabels.get(key) ?? []), t]);
  }
  const lines = [
    `# AgentDojo ${name}: built from the tool classification only (bench/agentdojo/pack.ts, rule ${rule}).`,
    'policies:',
    `  - name: agentdojo-${name}-exit-${rule}`,
    '    effect: review',
    `    agents: ["${AGENTS}"]`,
    '    priority: 10',
    `    actions: ${list(exits.map((t) => `${name}.${t}`))}`,
    `    condition: "${RULE_CONDITION[rule]}"`,
  ];
  for (const [key, group] of byLabels) {
    lines.push(
      `  - name: agentdojo-${name}-reads-${key.replace(',', '-')}`,
      '    effect: allow',
      `    agents: ["${AGENTS}"]`,
      '    priority: 50',
      `    actions: ${list(group.map((t) => `${name}.${t}`))}`,
      `    labels: ${list(key.split(','))}`,
    );
  }
  lines.push(
    `  - name: agentdojo-${name}-tools`,
    '    effect: allow',
    `    agents: ["${AGENTS}"]`,
    '    priority: 100',
    `    actions: ["${name}.*"]`,
  );
  return `${lines.join('\n')}\n`;
}
