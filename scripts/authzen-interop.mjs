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
 *     [--attributes users.json] decisions.json [more.json ...]
 *
 * --attributes: a JSON object of subject id -> attributes (the scenario's
 * "attributes associated with users"); each is stored first with PUT
 * /v1/agents/:agent_id, so policies read them as agent.attributes.…
 * --url and --key default to AUTHZ_URL and AUTHZ_API_KEY. Exit status 0 when
 * every decision matched, 1 otherwise. The files are read from wherever they
 * are (a checkout of openid/authzen, for instance): none is shipped here.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { url: { type: 'string' }, key: { type: 'string' }, attributes: { type: 'string' }, quiet: { type: 'boolean' } },
});
const url = (values.url ?? process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const key = values.key ?? process.env.AUTHZ_API_KEY;
if (!key || positionals.length === 0) {
  console.error('usage: authzen-interop.mjs --url URL --key KEY [--attributes FILE] DECISIONS.json...');
  process.exit(2);
}

async function call(method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
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
  const users = JSON.parse(readFileSync(values.attributes, 'utf8'));
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
      const got = endpoint === 'evaluation' ? r.json?.decision : r.json?.evaluations?.map((e) => ({ decision: e.decision }));
      const want = endpoint === 'evaluation' ? expected : expected.map((e) => ({ decision: e.decision }));
      const ok = r.status === 200 && JSON.stringify(got) === JSON.stringify(want);
      if (ok) passed++;
      else failed++;
      if (!ok || !values.quiet) {
        console.log(`${ok ? 'PASS' : 'FAIL'} ${endpoint} ${JSON.stringify(request)}${ok ? '' : `\n     expected ${JSON.stringify(want)}, got ${r.status} ${r.text}`}`);
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
