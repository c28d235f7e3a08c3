/**
 * The bench policies as Cerbos policies (bench/http/cerbos.ts serves them with
 * the Cerbos PDP): the peer decides from the same policy set, so that its
 * rate is compared on an equal footing. No side effects.
 *
 * Translation, policy by policy:
 * - a policy naming agents becomes rules of a principal policy per agent
 *   (`principalPolicy.principal` is an exact id: a glob such as `bench-*` or
 *   `team-4-*` is expanded to the agent ids the set names, the bench agent
 *   included);
 * - a policy for every agent (the guardrails) becomes a rule of the resource
 *   policy of its resource kind, for every role;
 * - resources `kind:rest` become the rule's resource kind (`*` when none or
 *   when the kind is a glob) with a condition on the id when the rest is not
 *   `*` (`R.id == "..."` or `R.id.startsWith("...")`);
 * - `review` has no Cerbos counterpart: it becomes EFFECT_DENY (no permit
 *   without a human), the answer a caller acts on.
 * The bench requests the load uses are checked to get the same answer from
 * both services before any timing (run.ts).
 */
import type { Policy } from '../../compiler/index.js';

/** A policy file: its name in the policy directory and its YAML text. */
export interface CerbosFile {
  name: string;
  text: string;
}

interface Rule {
  kind: string;
  action: string;
  effect: 'EFFECT_ALLOW' | 'EFFECT_DENY';
  condition: string | null;
}

const q = (s: string) => JSON.stringify(s);

/** Whether `id` matches the agent glob (`*` any run of characters). */
function globMatches(glob: string, id: string): boolean {
  const re = new RegExp(
    `^${glob
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(id);
}

/** The rules of one policy: a rule per action and resource pattern. */
function rulesOf(p: Policy): Rule[] {
  const effect = p.effect === 'allow' ? 'EFFECT_ALLOW' : 'EFFECT_DENY';
  const resources = p.resources ?? ['*'];
  const rules: Rule[] = [];
  for (const action of p.actions) {
    for (const r of resources) {
      const colon = r.indexOf(':');
      const kind = colon < 0 || r.slice(0, colon).includes('*') ? '*' : r.slice(0, colon);
      const rest = colon < 0 ? r : r.slice(colon + 1);
      let condition: string | null = null;
      if (kind !== '*' && rest !== '*') {
        const star = rest.indexOf('*');
        condition =
          star < 0
            ? `R.id == ${q(rest)}`
            : star === rest.length - 1
              ? `R.id.startsWith(${q(rest.slice(0, -1))})`
              : `R.id.matches(${q(`^${rest.split('*').join('.*')}$`)})`;
      }
      rules.push({ kind, action, effect, condition });
    }
  }
  return rules;
}

/** A principal policy's action entry (under `rules[].actions`). */
function principalAction(r: Rule, indent: string): string[] {
  return [`${indent}- action: ${q(r.action)}`, `${indent}  effect: ${r.effect}`, ...conditionYaml(r, `${indent}  `)];
}

/** A resource policy's rule, for every role. */
function resourceRule(r: Rule, indent: string): string[] {
  return [
    `${indent}- actions: [${q(r.action)}]`,
    `${indent}  effect: ${r.effect}`,
    `${indent}  roles: ["*"]`,
    ...conditionYaml(r, `${indent}  `),
  ];
}

function conditionYaml(r: Rule, indent: string): string[] {
  return r.condition ? [`${indent}condition:`, `${indent}  match:`, `${indent}    expr: ${q(r.condition)}`] : [];
}

/**
 * The Cerbos policy files for `policies`; `agents` are the ids agent globs are expanded to.
 */
export function cerbosPolicies(policies: readonly Policy[], agents: readonly string[]): CerbosFile[] {
  const byAgent = new Map<string, Rule[]>();
  const byKind = new Map<string, Rule[]>();
  for (const p of policies) {
    if (p.state !== 'enabled') continue;
    const rules = rulesOf(p);
    if (!p.agents) {
      for (const r of rules) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r]);
      continue;
    }
    const ids = new Set<string>();
    for (const glob of p.agents)
      for (const id of glob.includes('*') ? agents.filter((a) => globMatches(glob, a)) : [glob]) ids.add(id);
    for (const id of ids) byAgent.set(id, [...(byAgent.get(id) ?? []), ...rules]);
  }
  const files: CerbosFile[] = [];
  let n = 0;
  for (const [agent, rules] of byAgent) {
    const kinds = [...new Set(rules.map((r) => r.kind))];
    const lines = [
      'apiVersion: api.cerbos.dev/v1',
      'principalPolicy:',
      `  principal: ${q(agent)}`,
      '  version: default',
      '  rules:',
    ];
    for (const kind of kinds) {
      lines.push(`    - resource: ${q(kind)}`, '      actions:');
      for (const r of rules.filter((x) => x.kind === kind)) lines.push(...principalAction(r, '        '));
    }
    files.push({ name: `principal-${n++}.yaml`, text: `${lines.join('\n')}\n` });
  }
  for (const [kind, rules] of byKind) {
    if (kind === '*') continue; // A resource policy names one kind: rules for every kind and agent stay out (the generator makes none).
    const lines = [
      'apiVersion: api.cerbos.dev/v1',
      'resourcePolicy:',
      `  resource: ${q(kind)}`,
      '  version: default',
      '  rules:',
    ];
    for (const r of rules) lines.push(...resourceRule(r, '    '));
    files.push({ name: `resource-${n++}.yaml`, text: `${lines.join('\n')}\n` });
  }
  return files;
}
