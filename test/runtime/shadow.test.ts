/**
 * Shadow policies in the service, on both stores: for enforcement a shadow
 * policy does not exist; a decision whose outcome with them enabled differs
 * carries metadata.shadow, is listed by ?shadow_diverged=true and counted by a
 * metric per policy; a policy entering shadow fires policy.updated "shadowed";
 * and `authz replay` against the service's own export lists the flips of a
 * candidate bundle.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, createBundle } from '../../compiler/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent as kitAgent, decide } from '../helpers/kit.js';

const agent = (tag: string) => kitAgent(`support-${tag}`);

for (const kind of STORE_KINDS) {
  describe(`shadow policies in the service (${kind})`, () => {
    let rt: TestRuntime;

    beforeAll(async () => {
      rt = await startRuntime(kind, { config: { testClock: true } });
      await rt.setPolicies([
        { id: 'pol_read', effect: 'allow', agents: ['support-*'], actions: ['orders.read'] },
        // A stricter rule tried in shadow: it would deny reads of archived orders.
        {
          id: 'pol_no_archive',
          state: 'shadow',
          priority: 10,
          effect: 'deny',
          actions: ['orders.read'],
          resources: ['order:archived-*'],
          budget: { unit: 'calls', limit: 1, period: 'monthly' },
        },
        // A shadow-only action: enforcement still says policy.not_found (never policy.disabled).
        { id: 'pol_new', state: 'shadow', effect: 'allow', actions: ['orders.export'] },
      ]);
    });
    afterAll(() => rt.close());

    it('enforcement ignores shadow policies; a differing outcome is in metadata.shadow', async () => {
      const a = agent('shadow');
      const archived = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:archived-1' });
      expect(archived).toMatchObject({
        effect: 'allow',
        reason: 'policy.matched',
        policy_id: 'pol_read',
        metadata: { matched_policy_ids: ['pol_read'], warnings: [] },
      });
      expect(archived.metadata.shadow).toEqual({
        effect: 'deny',
        reason: 'policy.matched',
        policy_id: 'pol_no_archive',
      });
      // The shadow policy's budget (1 call) never applies: a second read is still allowed.
      expect((await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:archived-2' })).effect).toBe(
        'allow',
      );
      const same = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:7' });
      expect(same.metadata).not.toHaveProperty('shadow');
      const onlyShadow = await decide(rt, { agent_id: a, action: 'orders.export' });
      expect(onlyShadow).toMatchObject({
        effect: 'deny',
        reason: 'policy.not_found',
        metadata: { shadow: { effect: 'allow', reason: 'policy.matched', policy_id: 'pol_new' } },
      });
      expect((await rt.getOk(`/v1/decisions/${archived.id}`)).metadata.shadow).toEqual(archived.metadata.shadow);
      // The preview says it too.
      const preview = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions/preview',
          payload: { agent_id: a, action: 'orders.read', resource: 'order:archived-3' },
        }),
      );
      expect(preview.shadow).toEqual({ effect: 'deny', reason: 'policy.matched', policy_id: 'pol_no_archive' });
    });

    it('GET /v1/decisions?shadow_diverged= lists the diverged ones, or the others; a metric counts them per policy', async () => {
      const a = agent('list');
      const d1 = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:archived-9' });
      const d2 = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:9' });
      const ids = async (q: string) =>
        ((await rt.getOk(`/v1/decisions?agent_id=${a}&${q}`)).data as Array<{ id: string }>).map((d) => d.id);
      expect(await ids('shadow_diverged=true')).toEqual([d1.id]);
      expect(await ids('shadow_diverged=false')).toEqual([d2.id]);
      const text = await rt.services.metrics.registry.metrics();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('authz_shadow_divergences_total{policy_id="pol_no_archive"}'));
      expect(Number(line?.split(' ').pop())).toBeGreaterThanOrEqual(1);
    });

    it('a policy entering shadow fires policy.updated with change "shadowed"', async () => {
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/policies',
        payload: { id: 'pol_trial', effect: 'allow', actions: ['reports.read'] },
      });
      const put = await rt.call(rt.testKey, {
        method: 'PUT',
        url: '/v1/policies/pol_trial',
        payload: { id: 'pol_trial', state: 'shadow', effect: 'allow', actions: ['reports.read'] },
      });
      expect(put.statusCode, put.body).toBe(200);
      const events = (await rt.getOk('/v1/events?type=policy.updated&limit=100')).data as Array<{
        data: { policy: { id: string }; change: string };
      }>;
      expect(events.filter((e) => e.data.policy.id === 'pol_trial').map((e) => e.data.change)).toEqual([
        'shadowed',
        'created',
      ]);
    });

    it('authz replay reads the export and lists the decisions a candidate bundle would flip', async () => {
      const a = agent('replay');
      const flips = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:archived-5' });
      const stays = await decide(rt, { agent_id: a, action: 'orders.read', resource: 'order:5' });
      rt.clock.advance(1);
      // The candidate: the shadow rule enabled.
      const candidate = compileSources([
        {
          file: 'candidate.yaml',
          text: 'policies:\n  - { id: pol_read, effect: allow, agents: ["support-*"], actions: [orders.read] }\n  - { id: pol_no_archive, priority: 10, effect: deny, actions: [orders.read], resources: ["order:archived-*"] }\n',
        },
      ]);
      expect(candidate.table).toBeDefined();
      const dir = mkdtempSync(join(tmpdir(), 'replay-'));
      const bundlePath = join(dir, 'bundle.json');
      writeFileSync(bundlePath, JSON.stringify(createBundle(candidate.table!)));
      await rt.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(rt.app.server.address() as AddressInfo).port}`;
      const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [
          'bin/authz.js',
          'replay',
          bundlePath,
          '--url',
          url,
          '--key',
          rt.testKey,
          '--since',
          '1h',
          '--format',
          'json',
          '--quiet',
        ]);
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(out.code, out.stderr).toBe(1);
      const report = JSON.parse(out.stdout) as {
        replayed: number;
        changed: number;
        changes: Array<{ decision_id: string; from: object; to: object }>;
      };
      const change = report.changes.find((c) => c.decision_id === flips.id);
      expect(change).toMatchObject({
        from: { effect: 'allow', reason: 'policy.matched' },
        to: { effect: 'deny', reason: 'policy.matched' },
      });
      expect(report.changes.map((c) => c.decision_id)).not.toContain(stays.id);
      expect(report.replayed).toBeGreaterThanOrEqual(2);
    });
  });
}
