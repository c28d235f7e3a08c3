/**
 * `authz push FILE [--url URL] [--key KEY] [--yes] [--retention-days N]`: sends a bundle written by
 * `authz compile` to a running service (PUT /v1/bundle), from CI for instance.
 * The bundle replaces the key's environment's whole set, so it first shows the
 * bundle's lints (`warning: lint.conflict: ...`) and what the push adds, changes and removes (the environment's policies read with
 * GET /v1/policies, compared with the bundle's as `authz diff` compares), and
 * asks before removing any, unless `--yes`. Without a terminal to ask on and
 * without `--yes`, a push that would remove policies lists them, changes
 * nothing and exits 1. The file's bytes are sent as they are. URL defaults to
 * AUTHZ_URL (else http://127.0.0.1:8080), the key (scopes policies:write and
 * policies:read; with only policies:write it cannot show the changes, and pushes
 * only with --yes) to AUTHZ_API_KEY. `--retention-days N` (the service's
 * AUTHZ_RETENTION_DAYS) adds the lint of history windows longer than the
 * decision log keeps (lint.history_beyond_retention).
 * Exit codes: 0 pushed, 1 not pushed (the service refused it, could not be
 * reached, or removals were not confirmed), 2 usage error (unreadable file, no key).
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import {
  compileItems,
  diffPolicySets,
  loadBundle,
  readArguments,
  readPolicyValue,
  renderPolicyChanges,
  usageProblem,
  wantsHelp,
  type Policy,
  type PolicySetDiff,
  type ReadPolicy,
} from '../../compiler/index.js';
import {
  askService,
  callService,
  credential,
  DEFAULT_URL,
  defaultIo,
  EXIT_OK,
  EXIT_PROBLEMS,
  EXIT_USAGE,
  serviceUrl,
  type CommandIo,
  type ServiceFailure,
} from './http-client.js';

export const PUSH_USAGE = `usage: authz push FILE [--url URL] [--key KEY] [--yes] [--retention-days N]
  FILE   a bundle written by authz compile; it replaces the key's environment's whole policy set
  --url  the service (default AUTHZ_URL or ${DEFAULT_URL})
  --key  an API key with scopes policies:write and policies:read (default AUTHZ_API_KEY); the key's environment receives the bundle
  --yes  remove the policies the bundle does not have without asking
  --retention-days N  the service's AUTHZ_RETENTION_DAYS: warn of history windows longer than the decision log keeps
Shows the bundle's lints (warnings) and the policies the push adds, changes and removes first, and asks before removing any
(without a terminal and without --yes: lists them, pushes nothing, exit 1).
examples:
  authz compile policies/ -o bundle.json && authz push bundle.json
  AUTHZ_URL=https://authz.example.com AUTHZ_API_KEY=svc_live_... authz push bundle.json --yes
exit codes: 0 pushed, 1 not pushed (refused, unreachable, removals not confirmed), 2 usage error`;

/** Asks a yes/no question; null when there is no terminal to ask on. */
export type Confirm = ((question: string) => Promise<boolean>) | null;

/** Asks on the process's terminal (null when stdin or stdout is not one). */
export function terminalConfirm(): Confirm {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return null;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      return /^y(es)?$/i.test((await rl.question(question)).trim());
    } finally {
      rl.close();
    }
  };
}

/** The fields of a policy resource that are not the policy's own (presenters/policy.ts). */
const RESOURCE_ONLY = ['object', 'livemode', 'created_at', 'updated_at'];

/**
 * The environment's policies as the service holds them (every page of
 * GET /v1/policies), else why they cannot be read (the reason printed): the
 * service's failure, or null (a policy that does not read back).
 */
async function currentPolicies(
  io: CommandIo,
  command: string,
  url: string,
  key: string,
): Promise<{ items: ReadPolicy[] } | { failure: ServiceFailure | null }> {
  const items: ReadPolicy[] = [];
  let after: string | undefined;
  for (;;) {
    const answer = await askService(io, {
      command,
      url,
      token: key,
      method: 'GET',
      path: `/v1/policies?limit=100${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`,
    });
    if ('failure' in answer) return answer;
    const page = answer.body;
    const data = (page.data ?? []) as Array<Record<string, unknown>>;
    for (const resource of data) {
      const own = Object.fromEntries(Object.entries(resource).filter(([k]) => !RESOURCE_ONLY.includes(k)));
      const read = readPolicyValue(own);
      if (read.items.length === 0) {
        io.err(
          `${command}: the service's policy ${String(resource.id)} does not read back: ${read.diagnostics[0]?.message ?? 'unknown problem'}`,
        );
        return { failure: null };
      }
      items.push(...read.items);
    }
    if (!page.has_more || data.length === 0) return { items };
    after = String(data.at(-1)!.id);
  }
}

/** The bundle's lints (warnings such as lint.conflict), as `authz compile` reported them, one line each. */
function bundleWarnings(policies: readonly Policy[], retentionDays: number | undefined): string[] {
  const compiled = compileItems(
    policies.flatMap((p) => readPolicyValue(p).items),
    { retentionDays },
  );
  return compiled.diagnostics.filter((d) => d.severity === 'warning').map((d) => `warning: ${d.code}: ${d.message}`);
}

/**
 * What the push changes and the bundle's lints; `changes` null when the
 * environment's policies cannot be read (the reason printed; `failure` the
 * service's, when it answered so or could not be reached); 'unreadable-bundle'
 * when the file does not load (the service then says why, in its own words).
 */
async function preview(
  io: CommandIo,
  command: string,
  url: string,
  key: string,
  bytes: Buffer,
  retentionDays: number | undefined,
): Promise<
  'unreadable-bundle' | { changes: PolicySetDiff | null; warnings: string[]; failure?: ServiceFailure | null }
> {
  let loaded;
  try {
    loaded = loadBundle(JSON.parse(bytes.toString('utf8')));
  } catch {
    return 'unreadable-bundle';
  }
  if (!loaded.ok) return 'unreadable-bundle';
  const warnings = bundleWarnings(loaded.bundle.policies, retentionDays);
  const current = await currentPolicies(io, command, url, key);
  if ('failure' in current) return { changes: null, warnings, failure: current.failure };
  const before = compileItems(current.items, { lint: false });
  if (!before.table) {
    io.err(`${command}: the service's policies do not compile here: ${before.diagnostics[0]?.message ?? ''}`);
    return { changes: null, warnings };
  }
  return { changes: diffPolicySets(before.table, loaded.table), warnings };
}

/**
 * Runs `authz push` (bin/authz.js calls it with the process's arguments).
 *
 * @param argv - the arguments after `authz push`.
 * @param io - where to write (default: the process's stdout and stderr).
 * @param confirm - asks before removing policies (default: on the terminal, null without one).
 * @returns the exit code.
 */
export async function pushCommand(
  argv: readonly string[],
  io: CommandIo = defaultIo,
  confirm: Confirm = terminalConfirm(),
): Promise<number> {
  const command = 'authz push';
  if (wantsHelp(argv)) {
    io.out(PUSH_USAGE);
    return EXIT_OK;
  }
  const usage = (message: string) => {
    io.err(usageProblem('push', message));
    return EXIT_USAGE;
  };
  let values: { url?: string; key?: string; yes?: boolean; 'retention-days'?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = readArguments(argv, {
      url: { type: 'string' },
      key: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
      'retention-days': { type: 'string' },
    }));
  } catch (e) {
    return usage((e as Error).message);
  }
  if (positionals.length !== 1)
    return usage(positionals.length === 0 ? 'missing the bundle FILE' : `one FILE only (got ${positionals.length})`);
  const file = positionals[0]!;
  const retentionText = values['retention-days'];
  const retentionDays = retentionText === undefined ? undefined : Number(retentionText);
  if (retentionDays !== undefined && (!/^[1-9][0-9]{0,4}$/.test(retentionText!) || retentionDays > 36_500)) {
    return usage(`--retention-days must be a whole number of days from 1 to 36500, not ${retentionText}`);
  }
  const key = credential(values.key, 'AUTHZ_API_KEY');
  if (!key) return usage('give --key or set AUTHZ_API_KEY');
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    io.err(`${command}: cannot read ${file}: ${(e as Error).message}`);
    return EXIT_USAGE;
  }
  const url = serviceUrl(values.url);
  const seen = await preview(io, command, url, key, bytes, retentionDays);
  if (seen !== 'unreadable-bundle') for (const line of seen.warnings) io.out(line);
  const changes = seen === 'unreadable-bundle' ? seen : seen.changes;
  const failure = seen === 'unreadable-bundle' ? undefined : seen.failure;
  if (failure && (failure.status === null || failure.status === 401)) {
    // Nothing else to say: no service there, or it refuses the key (the PUT would fail the same way).
    io.err(
      failure.status === null
        ? `${command}: nothing was pushed: no service answered at ${url} (from --url, else AUTHZ_URL, else ${DEFAULT_URL}); is it running there?`
        : `${command}: nothing was pushed: ${url} refused the key (from --key, else AUTHZ_API_KEY); check it is a key of that service, not revoked`,
    );
    return EXIT_PROBLEMS;
  }
  if (changes === null && !values.yes) {
    const scope =
      failure?.code === 'auth.scope_insufficient' ? ' (the key needs policies:read besides policies:write)' : '';
    io.err(
      `${command}: cannot tell what the push would change${scope}, so it could remove policies unseen; nothing was pushed. --yes pushes all the same.`,
    );
    return EXIT_PROBLEMS;
  }
  if (changes === null) io.err(`${command}: pushing without showing the changes (--yes)`);
  else if (changes !== 'unreadable-bundle') {
    for (const line of renderPolicyChanges(changes, `${file} -> ${url}`)) io.out(line);
    const removing = changes.removed.length;
    if (removing > 0 && !values.yes) {
      const question = `Remove ${removing} ${removing === 1 ? 'policy' : 'policies'} from the service (listed with -)? [y/N] `;
      if (!confirm) {
        io.err(
          `${command}: the push would remove ${removing} ${removing === 1 ? 'policy' : 'policies'} (listed with -); nothing was pushed. Run again with --yes to remove them.`,
        );
        return EXIT_PROBLEMS;
      }
      if (!(await confirm(question))) {
        io.err(`${command}: nothing was pushed`);
        return EXIT_PROBLEMS;
      }
    }
  }
  const body = await callService(io, { command, url, token: key, method: 'PUT', path: '/v1/bundle', body: bytes });
  if (!body) return EXIT_PROBLEMS;
  io.out(`pushed: ${body.policies} policies, hash ${body.hash}`);
  return EXIT_OK;
}
