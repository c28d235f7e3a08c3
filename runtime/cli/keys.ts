/**
 * `authz keys`: the operator API from the command line (README: The `authz` CLI).
 *
 *   authz keys create --account acc_... | --account-name NAME [--environment test|live] [--scopes a,b] [--format text|json]
 *   authz keys revoke key_...
 *   authz keys rotate              the permit signing key (POST /admin/signing-keys/rotate)
 *   authz keys rotate key_...      an API key: a new key like it, the old one revoked (POST /admin/api-keys/:id/rotate)
 *
 * Every subcommand takes --url (default AUTHZ_URL, else http://127.0.0.1:8080) and
 * --admin-token (default AUTHZ_ADMIN_TOKEN). Exit codes: 0 done, 1 the service
 * refused or could not be reached (status, code and message printed), 2 usage error.
 */
import type { ParseArgsConfig } from 'node:util';
import { didYouMean, readArguments, usageProblem, UsageError, wantsHelp } from '../../compiler/index.js';
import {
  callService,
  credential,
  DEFAULT_URL,
  defaultIo,
  EXIT_OK,
  EXIT_PROBLEMS,
  EXIT_USAGE,
  serviceUrl,
  type CommandIo,
} from './http-client.js';

export const KEYS_USAGE = `usage:
  authz keys create (--account acc_... | --account-name NAME) [--environment test|live] [--scopes SCOPE,...] [--format text|json]
  authz keys revoke key_... [--format text|json]
  authz keys rotate [key_...] [--format text|json]
options of every subcommand: --url URL (default AUTHZ_URL or ${DEFAULT_URL}), --admin-token TOKEN (default AUTHZ_ADMIN_TOKEN)
--account-name NAME: the one account of that name (created when there is none; two or more: exit 1, their ids listed)
examples:
  authz keys create --account-name acme --environment live --scopes decisions:write,policies:read
  authz keys rotate key_4f2a...
exit codes: 0 done, 1 the service refused or could not be reached, 2 usage error`;

const COMMON = {
  url: { type: 'string' },
  'admin-token': { type: 'string' },
  format: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];
const CREATE = {
  ...COMMON,
  account: { type: 'string' },
  'account-name': { type: 'string' },
  environment: { type: 'string' },
  scopes: { type: 'string' },
} as const;

type Format = 'text' | 'json';

interface KeyRecord {
  id: string;
  key: string;
  account_id: string;
  environment: string;
  scopes: string[];
  created_at: string;
  replaces?: string;
}

export async function keysCommand(argv: readonly string[], io: CommandIo = defaultIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined ? false : sub === 'help' || wantsHelp([sub, ...rest])) {
    io.out(KEYS_USAGE);
    return EXIT_OK;
  }
  const command = `authz keys ${sub ?? ''}`.trimEnd();
  try {
    switch (sub) {
      case 'create': {
        const { values } = parse(rest, CREATE, 0);
        return await create(io, command, connection(values), values);
      }
      case 'revoke': {
        const { values, positionals } = parse(rest, COMMON, 1);
        const fmt = format(values.format);
        const id = keyId(positionals[0]);
        const body = await callService(io, {
          command,
          ...connection(values),
          method: 'DELETE',
          path: `/admin/api-keys/${encodeURIComponent(id)}`,
        });
        if (!body) return EXIT_PROBLEMS;
        return done(io, fmt, body, () => io.out(`revoked: ${body.id}; it is refused from now on`));
      }
      case 'rotate': {
        const { values, positionals } = parse(rest, COMMON, 0, 1);
        const fmt = format(values.format);
        if (positionals.length === 0) {
          const body = await callService(io, {
            command,
            ...connection(values),
            method: 'POST',
            path: '/admin/signing-keys/rotate',
          });
          if (!body) return EXIT_PROBLEMS;
          return done(io, fmt, body, () =>
            io.out(`rotated: new signing key ${body.kid}; the previous key stays in the JWKS until its tokens expire`),
          );
        }
        const id = keyId(positionals[0]);
        const body = await callService(io, {
          command,
          ...connection(values),
          method: 'POST',
          path: `/admin/api-keys/${encodeURIComponent(id)}/rotate`,
        });
        if (!body) return EXIT_PROBLEMS;
        return done(io, fmt, body, () =>
          printKey(io, `rotated: ${body.replaces} is revoked; its replacement:`, body as KeyRecord),
        );
      }
      default:
        if (sub === undefined) throw new UsageError('missing the subcommand: create, revoke or rotate');
        throw new UsageError(
          `unknown subcommand ${JSON.stringify(sub)}${didYouMean(sub, ['create', 'revoke', 'rotate'])}`,
        );
    }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageProblem(sub === 'create' || sub === 'revoke' || sub === 'rotate' ? `keys ${sub}` : 'keys', e.message));
    return EXIT_USAGE;
  }
}

async function create(
  io: CommandIo,
  command: string,
  conn: Connection,
  values: Record<string, string | undefined>,
): Promise<number> {
  const fmt = format(values.format);
  if ((values.account === undefined) === (values['account-name'] === undefined))
    throw new UsageError('give --account acc_... or --account-name NAME (one of them)');
  const environment = values.environment ?? 'test';
  if (environment !== 'test' && environment !== 'live') throw new UsageError('--environment must be test or live');
  const scopes = (values.scopes ?? '*')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (scopes.length === 0)
    throw new UsageError('--scopes needs at least one scope (e.g. decisions:write,policies:read, or *)');

  let accountId = values.account!;
  let createdAccount: string | undefined;
  /** What --account-name did with the account (reused or created), said before the key. */
  let accountNote: string | undefined;
  const name = values['account-name'];
  if (name !== undefined) {
    // One account of that name: reuse it; none: create it; several: the operator picks one.
    const found = await callService(io, {
      command,
      ...conn,
      method: 'GET',
      path: `/admin/accounts?name=${encodeURIComponent(name)}`,
    });
    if (!found) return EXIT_PROBLEMS;
    const named = (found.data ?? []) as Array<{ id: string; name: string }>;
    if (named.length > 1) {
      io.err(
        `${command}: ${named.length} accounts are named ${JSON.stringify(name)}: ${named.map((a) => a.id).join(', ')}; give the one to use with --account acc_...`,
      );
      return EXIT_PROBLEMS;
    }
    if (named.length === 1) {
      accountId = named[0]!.id;
      accountNote = `using the existing account ${accountId} (${name})`;
    } else {
      const account = await callService(io, {
        command,
        ...conn,
        method: 'POST',
        path: '/admin/accounts',
        body: { name },
      });
      if (!account) return EXIT_PROBLEMS;
      accountId = account.id;
      createdAccount = `created account ${account.id} (${account.name})`;
      accountNote = createdAccount;
    }
  }
  const body = await callService(io, {
    command,
    ...conn,
    method: 'POST',
    path: `/admin/accounts/${encodeURIComponent(accountId)}/api-keys`,
    body: { environment, scopes },
  });
  if (!body) {
    if (createdAccount) io.err(`${command}: ${createdAccount}, but no key: retry with --account ${accountId}`);
    return EXIT_PROBLEMS;
  }
  // --format json: stdout is the key's record alone (for jq); what was done with the account goes to stderr.
  if (fmt === 'json' && accountNote) io.err(accountNote);
  const heading = accountNote ? `${accountNote}\ncreated API key:` : 'created API key:';
  return done(io, fmt, body, () => printKey(io, heading, body as KeyRecord));
}

/** Prints the service's answer as JSON (--format json) or as text; exit 0. */
function done(io: CommandIo, fmt: Format, body: Record<string, unknown>, text: () => void): number {
  if (fmt === 'json') io.out(JSON.stringify(body, null, 2));
  else text();
  return EXIT_OK;
}

function printKey(io: CommandIo, heading: string, k: KeyRecord): void {
  io.out(
    [
      heading,
      `  id:          ${k.id}`,
      `  account:     ${k.account_id}`,
      `  environment: ${k.environment}`,
      `  scopes:      ${k.scopes.join(',')}`,
      `  created:     ${k.created_at}`,
      `  key:         ${k.key}`,
      'The full key is shown only this once (the service keeps a hash): store it now.',
    ].join('\n'),
  );
}

interface Connection {
  url: string;
  token: string;
}

function connection(values: { url?: string; 'admin-token'?: string }): Connection {
  const token = credential(values['admin-token'], 'AUTHZ_ADMIN_TOKEN');
  if (!token) throw new UsageError('give --admin-token or set AUTHZ_ADMIN_TOKEN');
  return { url: serviceUrl(values.url), token };
}

function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
  minPositionals: number,
  maxPositionals = minPositionals,
) {
  const parsed = readArguments(args, options);
  const n = parsed.positionals.length;
  if (n < minPositionals) throw new UsageError('missing the API key id (key_...)');
  if (n > maxPositionals)
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`);
  return parsed;
}

function keyId(id: string | undefined): string {
  if (id?.startsWith('svc_'))
    throw new UsageError('that is the key itself, not its id: give the key_... id printed when it was created');
  if (!id || !id.startsWith('key_'))
    throw new UsageError(`expected an API key id (key_...), got ${JSON.stringify(id ?? '')}`);
  return id;
}

function format(value: string | undefined): Format {
  if (value === undefined || value === 'text') return 'text';
  if (value === 'json') return 'json';
  throw new UsageError('--format must be text or json');
}
