/**
 * `authz explain PATH... --agent A --action X [--resource R] [--amount N] [--context JSON] [--agent-attributes JSON]
 * [--session ID] [--on-behalf-of USER] [--history FILE] [--labels a,b] [--all] [--format text|json]`
 */
import { resolve } from 'node:path';
import { isValidAction } from '../patterns/action.js';
import type { EvaluationInput } from '../policy/types.js';
import { explain } from '../table/explain.js';
import { requestWithHistory } from '../testing/history.js';
import { historyLines } from '../testing/run-tests.js';
import { readHistoryFile } from '../testing/test-file.js';
import { readSource } from './files.js';
import { renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { EXIT_OK, EXIT_PROBLEMS, UsageError, type CliIo } from './io.js';
import { loadPolicies } from './load-policies.js';

export interface ExplainOptions {
  paths: string[];
  agent?: string;
  action?: string;
  resource?: string;
  amount?: string;
  context?: string;
  /** The agent's attributes as JSON (what PUT /v1/agents/:agent_id stores): read as `agent.attributes.…`. */
  agentAttributes?: string;
  /** The request's session_id. */
  session?: string;
  /** The request's on_behalf_of. */
  onBehalfOf?: string;
  /** A YAML or JSON file of earlier decisions (a test case's `history:` list). */
  history?: string;
  /** The session's labels, comma-separated. */
  labels?: string;
  all: boolean;
  format: OutputFormat;
}

export function requestFromOptions(o: ExplainOptions): EvaluationInput {
  if (!o.agent) throw new UsageError('missing --agent ID (the agent_id of the request to explain)');
  if (!o.action) throw new UsageError('missing --action NAMESPACE.VERB (e.g. payments.refund)');
  if (!isValidAction(o.action))
    throw new UsageError(`--action ${o.action} is not namespace.verb ([a-z][a-z0-9_]* each, no wildcards)`);
  const request: EvaluationInput = { agent_id: o.agent, action: o.action };
  if (o.resource !== undefined) request.resource = o.resource;
  if (o.amount !== undefined) {
    const amount = Number(o.amount);
    if (o.amount.trim() === '' || !Number.isFinite(amount) || amount < 0)
      throw new UsageError(`--amount must be a number >= 0, not ${o.amount}`);
    request.amount = amount;
  }
  if (o.context !== undefined) request.context = jsonObjectOption('--context', o.context);
  if (o.agentAttributes !== undefined)
    request.agent_attributes = jsonObjectOption('--agent-attributes', o.agentAttributes);
  if (o.session !== undefined) request.session_id = nonEmpty('--session', o.session);
  if (o.onBehalfOf !== undefined) request.on_behalf_of = nonEmpty('--on-behalf-of', o.onBehalfOf);
  return request;
}

function nonEmpty(option: string, value: string): string {
  if (value.length === 0 || value.length > 256) throw new UsageError(`${option} must be 1 to 256 characters`);
  return value;
}

const LABEL = /^[a-z][a-z0-9_.-]{0,63}$/;

/** `--labels a,b`: the session's labels. */
export function labelsOption(text: string): string[] {
  const labels = text.split(',').map((l) => l.trim());
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined)
    throw new UsageError(
      `--labels: ${JSON.stringify(bad)} is not a label (a lower-case letter, then up to 63 lower-case letters, digits, _, . or -)`,
    );
  return [...new Set(labels)];
}

/** An option's value parsed as a JSON object, or a UsageError naming the option. */
function jsonObjectOption(option: string, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${option} is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${option} must be a JSON object`);
  return value as Record<string, unknown>;
}

export function runExplain(options: ExplainOptions, io: CliIo): number {
  const asked = requestFromOptions(options);
  const labels = options.labels !== undefined ? labelsOption(options.labels) : undefined;
  let entries;
  if (options.history !== undefined) {
    let source;
    try {
      source = readSource(resolve(io.cwd, options.history), io.cwd);
    } catch (e) {
      throw new UsageError(`--history ${options.history}: ${(e as Error).message}`);
    }
    const read = readHistoryFile(source);
    if (!read.entries) {
      for (const line of renderDiagnostics(read.diagnostics, 'text', io.isTTY, new Map())) io.err(line);
      return EXIT_PROBLEMS;
    }
    entries = read.entries;
  }
  const request = requestWithHistory(asked, entries, labels);
  const loaded = loadPolicies(options.paths, io.cwd);
  if (!loaded.table) {
    for (const line of renderDiagnostics(
      loaded.diagnostics,
      options.format === 'json' ? 'text' : options.format,
      io.isTTY,
      loaded.sources,
    ))
      io.err(line);
    return EXIT_PROBLEMS;
  }
  const { evaluation, withShadow, trace, history } = explain(loaded.table, request);
  const where = (id: string) => {
    const o = loaded.origins.get(id);
    return o?.file ? `${o.file}:${o.line}` : '';
  };
  const shown = trace.filter((t) => options.all || (t.outcome !== 'action' && t.outcome !== 'agent'));
  if (options.format === 'json') {
    io.out(
      JSON.stringify(
        {
          request: { ...asked, ...(labels !== undefined ? { session_labels: labels } : {}) },
          ...(history.length > 0 ? { history } : {}),
          decision: { ...evaluation, matched: evaluation.matched.map((p) => p.id) },
          ...(withShadow ? { with_shadow: { ...withShadow, matched: withShadow.matched.map((p) => p.id) } } : {}),
          policies: shown.map((t) => ({
            id: t.policy.id,
            priority: t.policy.priority,
            effect: t.policy.effect,
            ...(t.shadow ? { shadow: true } : {}),
            outcome: t.outcome,
            detail: t.detail,
            source: where(t.policy.id),
          })),
        },
        null,
        2,
      ),
    );
    return EXIT_OK;
  }
  io.out(
    `decision: ${evaluation.effect} (${evaluation.reason})${evaluation.policy_id ? ` by ${evaluation.policy_id}` : ''}`,
  );
  for (const w of evaluation.warnings) io.out(`warning: ${w.code}: ${w.message}`);
  if (withShadow) {
    const outcome = `${withShadow.effect} (${withShadow.reason})${withShadow.policy_id ? ` by ${withShadow.policy_id}` : ''}`;
    io.out(
      `shadow: ${outcome}${evaluation.shadow ? ' <- differs: what the decision would be with the shadow policies enabled' : ', the same effect and reason with the shadow policies enabled'}`,
    );
  }
  for (const line of historyLines(history)) io.out(line);
  const hidden = trace.length - shown.length;
  io.out(shown.length ? 'policies:' : 'no policy matched the agent and action');
  for (const t of shown) {
    // => the deciding policy, + another match, ~> the winner with the shadow policies enabled (a shadow one), - dropped out.
    const mark =
      t.outcome !== 'matched'
        ? ' -'
        : t.policy.id === evaluation.policy_id
          ? '=>'
          : t.shadow && t.policy.id === withShadow?.policy_id
            ? '~>'
            : ' +';
    const tag = t.shadow ? ' [shadow]' : '';
    io.out(
      `  ${mark} ${t.policy.id}${tag} (priority ${t.policy.priority}, ${t.policy.effect}) ${t.outcome === 'matched' ? 'matched' : `dropped at ${t.outcome}`}: ${t.detail}${where(t.policy.id) ? `  [${where(t.policy.id)}]` : ''}`,
    );
  }
  if (hidden > 0)
    io.out(
      `${hidden} other ${hidden === 1 ? 'policy does' : 'policies do'} not match the agent or action (--all lists them)`,
    );
  return EXIT_OK;
}
