/**
 * lint.history_beyond_retention where the retention is known
 * (docs/policies.md#history-in-conditions): the service's answer to a policy
 * write carries it when a history window is longer than AUTHZ_RETENTION_DAYS,
 * and `authz push --retention-days N` prints it before pushing; a window within
 * the retention gets none. Both stores.
 */
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, createBundle } from '../../compiler/index.js';
import { pushCommand } from '../../runtime/cli/push.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

const LINT = 'lint.history_beyond_retention';
const policy = (id: string, window: string) => ({
  id,
  name: id.replace(/_/g, '-'),
  effect: 'allow',
  actions: ['x.go'],
  condition: `history.count('x.go', '${window}', 'agent') < 5`,
});

describe.each(STORE_KINDS)('the retention lint of history windows (%s store)', (kind) => {
  let rt: TestRuntime;
  let dir: string;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { retentionDays: 7 } });
    dir = mkdtempSync(join(tmpdir(), 'authz-retention-'));
  });
  afterAll(async () => {
    await rt?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the policy answer warns of a window beyond AUTHZ_RETENTION_DAYS, not of one within it', async () => {
    const long = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: policy('pol_long_window', '30d'),
    });
    expect(long.statusCode, long.body).toBe(201);
    expect((long.json() as JsonObject).warnings.map((w: JsonObject) => w.code)).toContain(LINT);
    const short = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: policy('pol_short_window', '6d'),
    });
    expect(short.statusCode, short.body).toBe(201);
    expect((short.json() as JsonObject).warnings.map((w: JsonObject) => w.code)).not.toContain(LINT);
  });

  it('authz push --retention-days prints it; without the flag nothing is known and nothing is said', async () => {
    await rt.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(rt.app.server.address() as AddressInfo).port}`;
    const { table } = compileSources([
      { file: 'p.yaml', text: `policies:\n  - ${JSON.stringify(policy('pol_pushed', '60d'))}\n` },
    ]);
    const file = join(dir, 'bundle.json');
    writeFileSync(file, JSON.stringify(createBundle(table!)));
    const push = async (...argv: string[]) => {
      const out: string[] = [];
      const code = await pushCommand([file, '--url', url, '--key', rt.testKey, '--yes', ...argv], {
        out: (t) => out.push(t),
        err: (t) => out.push(t),
      });
      return { code, out: out.join('\n') };
    };
    const told = await push('--retention-days', '7');
    expect(told.code).toBe(0);
    expect(told.out).toContain(LINT);
    const silent = await push();
    expect(silent.code).toBe(0);
    expect(silent.out).not.toContain(LINT);
    expect(silent.out).toContain('pushed: 1 policies');
  });
});
