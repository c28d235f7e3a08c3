/**
 * Sessions over Streamable HTTP leave nothing behind once they have expired
 * (issue 30, sessions memory): the listener's and the proxy's own bookkeeping
 * count none, the upstream's sessions were ended, and after a full GC the
 * transports and relays of those sessions are gone (weak references to them
 * are cleared). Real SDK on both sides: an McpServer over Streamable HTTP on
 * 127.0.0.1 upstream, raw `initialize` calls from the client side.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyConfig } from '../../clients/mcp-proxy/config.js';
import { listenStreamableHttp, type Listening } from '../../clients/mcp-proxy/http-listen.js';
import { McpProxy } from '../../clients/mcp-proxy/proxy.js';
import { AuthzClient } from '../../clients/typescript/index.js';
import { startSessionUpstream, type SessionUpstream } from '../../bench/mcp/session-upstream.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Polls `check` (bounded by rounds, not time); `between` runs before each retry. */
async function poll(
  check: () => boolean,
  what: () => string,
  between: () => Promise<void> = () => new Promise((r) => setTimeout(r, 50)),
  rounds = 400,
): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (check()) return;
    await between();
  }
  throw new Error(`never: ${what()}`);
}

describe('sessions over HTTP after expiry', () => {
  let upstream: SessionUpstream;
  let proxy: McpProxy;
  let listening: Listening;
  const refs: Array<WeakRef<object>> = [];
  const lines: string[] = [];

  beforeAll(async () => {
    upstream = await startSessionUpstream('release-test');
    const config = parseProxyConfig({ agent_id: 'release-bot', server: 'release' });
    // Nothing is decided for an initialize: the service is never called.
    const authz = new AuthzClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'svc_test_sk_never_called0000000000000000000000',
    });
    proxy = await McpProxy.start({
      config,
      authz,
      upstream: { kind: 'http', url: new URL(upstream.url) },
      log: (l) => lines.push(l),
    });
    listening = await listenStreamableHttp({
      host: '127.0.0.1',
      port: 0,
      idleSeconds: 0.2,
      maxSessions: 100,
      log: (l) => lines.push(l),
      openSession: async (transport, id, onEnd) => {
        const relay = await proxy.openSession(transport, { agentId: 'release-bot', sessionId: `mcp-${id}` }, onEnd);
        refs.push(new WeakRef(transport), new WeakRef(relay));
        return relay;
      },
    });
  });
  afterAll(async () => {
    await listening?.close();
    await proxy?.close();
    upstream?.close();
  });

  it('leave no session in the listener, the proxy or upstream, and their transports and relays are collected', async () => {
    const SESSIONS = 30;
    for (let i = 0; i < SESSIONS; i++) {
      const r = await fetch(listening.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
      await r.text();
      expect(r.status).toBe(200);
    }
    expect(refs).toHaveLength(2 * SESSIONS);
    await poll(
      () => listening.sessionCount() === 0 && proxy.sessionCount === 0 && upstream.sessions() === 0,
      () =>
        `every session ended (left: listener ${listening.sessionCount()}, proxy ${proxy.sessionCount}, upstream ${upstream.sessions()})`,
    );
    // A full GC between turns of the event loop: weak references clear once nothing else holds their objects.
    const collect = async () => {
      await new Promise((r) => setImmediate(r));
      gc();
    };
    await poll(
      () => refs.every((ref) => ref.deref() === undefined),
      () => `the ${refs.filter((ref) => ref.deref() !== undefined).length} transports and relays left collected`,
      collect,
      50,
    );
    expect(lines.filter((l) => /error/i.test(l))).toEqual([]);
  });
});
