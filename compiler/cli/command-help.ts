/**
 * What `authz --help` and `authz <command> --help` print for the compiler's
 * commands: the global list of commands, and for validate, compile, test,
 * explain and diff their options (each explained), examples and exit codes.
 * The runtime's commands keep theirs beside them (runtime/cli/), replay in
 * compiler/cli/replay.ts, mcp-proxy in clients/mcp-proxy/cli.ts.
 */

export const USAGE = `usage: authz <command> [options]

commands:
  validate PATH...            check policy files; problems as FILE:LINE:COL: message
           [--strict] [--format text|json|github]
  compile PATH... -o FILE     validate, then write the bundle artifact (-o - for stdout)
           [--strict] [--format text|json|github]
  test PATH...                run policy test files (*.test.yaml)
           [--coverage] [--min-coverage PERCENT] [--format text|json|github]
  explain PATH... --agent ID --action NS.VERB [--resource R] [--amount N]
           [--context JSON] [--agent-attributes JSON] [--session ID] [--on-behalf-of USER]
           [--history FILE] [--labels a,b] [--all] [--format text|json]
                              the decision and why, policy by policy (shadow ones marked),
                              with the history values the policies read
  diff OLD NEW [--sample N] [--format text|json]
                              what changes between two policy sets (bundles or policy
                              files): policies added, removed, changed; winners by action

runtime commands (they run or call the service; --url defaults to AUTHZ_URL or
http://127.0.0.1:8080, --admin-token to AUTHZ_ADMIN_TOKEN):
  serve [--bundle FILE]       run the service (configuration from the environment:
                              authz serve --help lists it)
  keys create (--account ACC_ID | --account-name NAME) [--environment test|live]
           [--scopes SCOPE,...] [--format text|json]
                              a new API key, printed once (--account-name: the
                              one account of that name, made when there is none)
  keys revoke KEY_ID          revoke an API key
  keys rotate [KEY_ID]        no id: a new permit signing key; an id: a new API key
                              like it, the old one revoked at once
  push FILE [--url URL] [--key KEY] [--yes]
                              PUT /v1/bundle a compiled bundle (key: AUTHZ_API_KEY),
                              showing what it adds, changes and removes first;
                              removals asked for, or --yes
  replay BUNDLE [--url URL] [--key KEY] [--since 7d] [--limit N]
           [--format text|json|github] [--quiet]
                              the stored decisions decided again against a candidate:
                              which would change (key: AUTHZ_API_KEY)
  mcp-proxy --config FILE [--listen HOST:PORT] [--public-url URL] [--url URL] [--key KEY]
           [--session ID] (-- COMMAND [ARGS...] | --upstream-url URL)
                              an MCP server that asks the service before every tool
                              call and decided request of the MCP server behind it;
                              with --listen and auth:, a gateway for many agents
                              (authz mcp-proxy --help; docs/mcp.md)

every command answers --help (or -h) with its options, examples and exit codes`;

/** Every command `authz` knows (bin/authz.js dispatches the runtime's), for "did you mean". */
export const ALL_COMMANDS = [
  'validate',
  'compile',
  'test',
  'explain',
  'diff',
  'serve',
  'keys',
  'push',
  'replay',
  'mcp-proxy',
  'help',
  'version',
];

const FORMAT_LINE = `  --format F   text (default; FILE:LINE:COL: message, a code frame on a terminal),
               json (one JSON document on stdout), github (GitHub Actions annotations)`;

/** `authz <command> --help` of the compiler's own commands. */
export const COMMAND_HELP: Readonly<Record<'validate' | 'compile' | 'test' | 'explain' | 'diff', string>> = {
  validate: `usage: authz validate PATH... [--strict] [--format text|json|github]
Checks policy files: each PATH a policy file (*.yaml, *.yml) or a folder of them (read recursively;
*.test.yaml files are left to authz test). Problems are printed as FILE:LINE:COL: message, then a count.
  PATH...      policy files or folders
  --strict     lint warnings (conflicts, unreachable policies) count as errors
${FORMAT_LINE}
examples:
  authz validate examples/support
  authz validate policies/ --strict --format github
exit codes: 0 no errors (warnings allowed unless --strict), 1 errors found, 2 usage error (no PATH,
  a PATH that does not exist or holds no policy files, an unknown option)`,

  compile: `usage: authz compile PATH... -o FILE [--strict] [--format text|json|github]
Validates the policy files, then writes the bundle (the compiled set, with its hash) that authz push,
authz serve --bundle and PUT /v1/bundle take. Nothing is written when there are errors.
  PATH...      policy files or folders
  -o, --output FILE   where to write the bundle; -o - writes it to stdout (problems then go to stderr)
  --strict     lint warnings count as errors
${FORMAT_LINE}
examples:
  authz compile examples/support -o bundle.json
  authz compile policies/ -o - --strict | gzip > bundle.json.gz
exit codes: 0 written, 1 errors found (nothing written), 2 usage error (no PATH or -o, a PATH that
  does not exist, an unknown option)`,

  test: `usage: authz test PATH... [--coverage] [--min-coverage PERCENT] [--format text|json|github]
Runs every policy test file (*.test.yaml) under PATHs, each against the policy files its policies:
lists (relative to it) or, without policies:, every policy file in its folder and below.
  PATH...      test files or folders
  --coverage   also print which policies no case exercises, and the share exercised
  --min-coverage PERCENT   fail when fewer than PERCENT (0-100) of the policies are exercised
               (implies --coverage)
${FORMAT_LINE}
examples:
  authz test examples/support
  authz test policies/ --min-coverage 90 --format github
exit codes: 0 every case passed (and coverage reached), 1 a case failed, a test file has errors, or
  coverage is below --min-coverage, 2 usage error (no PATH, no test files, an unknown option)`,

  explain: `usage: authz explain PATH... --agent ID --action NS.VERB [--resource R] [--amount N]
         [--context JSON] [--agent-attributes JSON] [--session ID] [--on-behalf-of USER]
         [--history FILE] [--labels a,b] [--all] [--format text|json]
The decision the policies in PATHs give one request, and why: every policy that matches (shadow
ones marked), the winner, and the reason. No service involved.
  PATH...      policy files or folders
  --agent ID   the request's agent_id
  --action NS.VERB     the action, namespace.verb (e.g. payments.refund)
  --resource R         the resource (e.g. order/42)
  --amount N           the amount, a number >= 0 (limits and conditions on amount read it)
  --context JSON       the request's context, a JSON object (conditions on context.* read it)
  --agent-attributes JSON   the agent's attributes, a JSON object (as PUT /v1/agents/ID stores them)
  --session ID         the request's session_id (history's session scope, session.labels)
  --on-behalf-of USER  the request's on_behalf_of (history's user scope)
  --history FILE       earlier decisions, YAML or JSON: the list a test case's history: takes
  --labels a,b         the session's labels, read as session.labels
  --all        also list the policies whose agents or actions do not match (by default only those
               that reach the other checks are listed, each with where it matched or dropped out)
  --format F   text (default) or json (the explanation as one JSON document)
examples:
  authz explain examples --agent support-bot-1 --action payments.refund --resource order:1001 \\
    --amount 20 --context '{"channel":"chat"}'
  authz explain policies/ --agent a1 --action files.read --resource doc/7 --all --format json
  authz explain examples/history --agent assistant-1 --action mail.send --session ses_a --labels private,untrusted
exit codes: 0 explained (whatever the decision), 1 the policies have errors, 2 usage error (no
  --agent or --action, an action that is not namespace.verb, JSON that does not parse, an unknown option)`,

  diff: `usage: authz diff OLD NEW [--sample N] [--format text|json]
What changes between two policy sets, each a bundle (.json, from authz compile) or policy files (a
file or folder): the policies added, removed and changed (field by field, old -> new), and the
actions whose winning policy changes.
  OLD NEW      the two sets
  --sample N   at most N concrete actions drawn from each wildcard pattern (payments.*) when probing
               the winners (default 25)
  --format F   text (default) or json
examples:
  authz diff deployed.json policies/
  git show main:bundle.json > old.json && authz diff old.json bundle.json --format json
exit codes: 0 no change, 1 changes, 2 usage error (not two sets, a path that does not exist, a set
  that does not compile: its errors on stderr)`,
};
