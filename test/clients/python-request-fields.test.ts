/**
 * The Python client keeps its own request types (a TypedDict, keyword
 * arguments) but sends what the service's schemas take: the fields of its
 * `DecisionRequest` (agent_authz/_request.py) are those of
 * schemas/api/decision-request.schema.json, required ones alike; the bodies of
 * confirm and add_labels and the query of budgets_remaining, built with every
 * argument set, have the fields of their schemas. python3 runs the package's
 * own code (no server, no PyPI); AUTHZ_TEST_PYTHON picks another interpreter.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON = process.env.AUTHZ_TEST_PYTHON ?? 'python3';

interface Schema {
  properties: Record<string, unknown>;
  required?: string[];
}
const schema = (name: string): Schema =>
  JSON.parse(readFileSync(`${ROOT}schemas/api/${name}.schema.json`, 'utf8')) as Schema;

/** What the Python package declares and builds, as JSON. */
function python(): {
  fields: string[];
  required: string[];
  confirm: string[];
  labels: string[];
  remaining: string[];
  sent: string[];
} {
  const script = `
import json, urllib.parse
from agent_authz._request import FIELDS, REQUIRED, decision_request
from agent_authz._calls import add_labels_call, confirm_call, remaining_call
every = {name: "x" for name in FIELDS}
print(json.dumps({
    "fields": list(FIELDS),
    "required": list(REQUIRED),
    "sent": sorted(decision_request(every)),
    "confirm": sorted(confirm_call("dec_1", amount=1.0, amounts={"USD": 1.0}).body or {}),
    "labels": sorted(add_labels_call("run_1", ["private"], "bot", detail="read a file").body or {}),
    "remaining": sorted(urllib.parse.parse_qs(remaining_call("bot", session_id="run_1", on_behalf_of="u").path.split("?", 1)[1])),
}))
`;
  const out = execFileSync(PYTHON, ['-c', script], {
    cwd: ROOT,
    env: { ...process.env, PYTHONPATH: `${ROOT}clients/python`, PYTHONDONTWRITEBYTECODE: '1' },
    encoding: 'utf8',
  });
  return JSON.parse(out) as ReturnType<typeof python>;
}

describe('the Python client sends the fields of the service schemas', () => {
  const py = python();
  const sorted = (xs: Iterable<string>) => [...xs].sort();

  it('DecisionRequest has exactly the properties of schemas/api/decision-request.schema.json, the same ones required', () => {
    const s = schema('decision-request');
    expect(sorted(py.fields)).toEqual(sorted(Object.keys(s.properties)));
    expect(sorted(py.required)).toEqual(sorted(s.required ?? []));
  });

  it('decide sends every field it is given, by the wire name', () => {
    expect(py.sent).toEqual(sorted(Object.keys(schema('decision-request').properties)));
  });

  it('confirm, add_labels and budgets_remaining send the fields of their schemas', () => {
    expect(py.confirm).toEqual(sorted(Object.keys(schema('decision-resolve').properties)));
    expect(py.labels).toEqual(sorted(Object.keys(schema('session-labels').properties)));
    expect(py.remaining).toEqual(sorted(Object.keys(schema('budget-remaining-query').properties)));
  });
});
