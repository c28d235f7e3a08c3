#!/usr/bin/env node
/**
 * Runs AuthZEN interop decision files against a running service and tallies
 * the decisions: each entry of `evaluation` is sent to POST
 * /access/v1/evaluation, each of `evaluations` to POST /access/v1/evaluations,
 * and the answer's `decision` (per entry for a batch) is compared with
 * `expected`. Only decisions are compared: the service's answers also carry a
 * `context` (decision id, effect, reason), which AuthZEN allows.
 *
 *   node scripts/authzen-interop.mjs --url http://127.0.0.1:8080 --key "$AUTHZ_API_KEY" \
 *     [--attributes users.json | --attributes <the scenario page, .md>] decisions.json [more.json ...]
 *
 * --attributes: the subjects' attributes (the scenario's "attributes
 * associated with users"), each stored first with PUT /v1/agents/:agent_id so
 * that policies read them as agent.attributes.…: a JSON object of subject id
 * -> attributes, or the scenario's Markdown page itself (the first JSON block
 * after its "Attributes associated with users" heading is read).
 * --url and --key default to AUTHZ_URL and AUTHZ_API_KEY. Exit status 0 when
 * every decision matched, 1 otherwise, 2 for a usage error. The files are read
 * from wherever they are (a checkout of openid/authzen, for instance): none is
 * shipped here. docs/api.md#the-todo-scenario.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: node scripts/authzen-interop.mjs [--url URL] [--key KEY] [--attributes FILE] [--quiet] DECISIONS.json...

Sends the AuthZEN interop decision files (openid/authzen:
  interop/authzen-todo-backend/test/decisions-authorization-api-1_0-02.json,
  interop/authzen-api-gateways/test-harness/test/decisions.json)
to a running service and compares the decisions with the expected ones.

  --url URL          the service (default: AUTHZ_URL, else http://127.0.0.1:8080)
  --key KEY          an API key with decisions:write and agents:write (default: AUTHZ_API_KEY)
  --attributes FILE  the subjects' attributes, stored first with PUT /v1/agents/:agent_id:
                     a JSON object of subject id -> attributes, or the scenario's Markdown page
                     (interop/authzen-interop-website/docs/scenarios/todo-1.0-id/index.md),
                     whose "Attributes associated with users" JSON block is read
  --quiet            print only the failures and the tallies
  --help             this text

The policies the files need are examples/authzen-todo (authz serve loads them into the
test environment). Exit status: 0 every decision matched, 1 some did not, 2 usage.`;

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      attributes: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (error) {
  console.error(`${error.message}\n\n${USAGE}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const url = (values.url ?? process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const key = values.key ?? process.env.AUTHZ_API_KEY;
if (!key || positionals.length === 0) {
  console.error(`${key ? 'no decision file given' : 'no API key: --key or AUTHZ_API_KEY'}\n\n${USAGE}`);
  process.exit(2);
}

/**
 * The subjects' attributes from a JSON file, or from the scenario's Markdown
 * page: the first fenced block after the "Attributes associated with users" heading.
 */
function readAttributes(file) {
  const text = readFileSync(file, 'utf8');
  if (!file.endsWith('.md')) return JSON.parse(text);
  const heading = text.search(/^#+ Attributes associated with users/m);
  const block = heading < 0 ? null : /```[a-z]*\n([\s\S]*?)```/.exec(text.slice(heading));
  if (!block) throw new Error(`${file}: no "Attributes associated with users" section with a JSON block`);
  return JSON.parse(block[1]);
}

async function call(method, path, body) {
  let response;
  try {
    response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (error) {
    console.error(`${method} ${url}${path}: ${error.cause?.message ?? error.message} (is the service running? --url)`);
    process.exit(2);
  }
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

if (values.attributes) {
  let users;
  try {
    users = readAttributes(values.attributes);
  } catch (error) {
    console.error(`--attributes ${values.attributes}: ${error.message}`);
    process.exit(2);
  }
  for (const [id, attributes] of Object.entries(users)) {
    const r = await call('PUT', `/v1/agents/${encodeURIComponent(id)}`, { attributes });
    if (r.status !== 200) {
      console.error(`PUT /v1/agents/${id}: ${r.status} ${r.text}`);
      process.exit(1);
    }
  }
  console.log(`stored the attributes of ${Object.keys(users).length} subjects`);
}

let failed = 0;
for (const file of positionals) {
  const cases = JSON.parse(readFileSync(file, 'utf8'));
  const tally = {};
  for (const endpoint of ['evaluation', 'evaluations']) {
    const entries = cases[endpoint] ?? [];
    if (entries.length === 0) continue;
    let passed = 0;
    for (const { request, expected } of entries) {
      const r = await call('POST', `/access/v1/${endpoint}`, request);
      const got =
        endpoint === 'evaluation' ? r.json?.decision : r.json?.evaluations?.map((e) => ({ decision: e.decision }));
      const want = endpoint === 'evaluation' ? expected : expected.map((e) => ({ decision: e.decision }));
      const ok = r.status === 200 && JSON.stringify(got) === JSON.stringify(want);
      if (ok) passed++;
      else failed++;
      if (!ok || !values.quiet) {
        console.log(
          `${ok ? 'PASS' : 'FAIL'} ${endpoint} ${JSON.stringify(request)}${ok ? '' : `\n     expected ${JSON.stringify(want)}, got ${r.status} ${r.text}`}`,
        );
      }
    }
    tally[endpoint] = `${passed}/${entries.length}`;
  }
  console.log(
    `${file}: ${Object.entries(tally)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}
process.exit(failed === 0 ? 0 : 1);
