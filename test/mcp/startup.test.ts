/**
 * `authz mcp-proxy` stops at start with a clear message when its action names
 * cannot work (docs/mcp.md#command-line: two tools mapping to one action, a
 * mapped action breaking the action grammar), when its configuration is invalid, and on a
 * usage error; the real command, in front of the real test tool server. No
 * service is needed: nothing is decided before the first MCP request.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureProxyBuilt, runProxyToExit, scratch, startStdioProxy, TOOLS_SERVER } from './helpers/proxy.js';

const ENV = { AUTHZ_URL: 'http://127.0.0.1:9', AUTHZ_API_KEY: 'svc_test_sk_unused00000000000000000000000000' };
const upstream = ['--', process.execPath, TOOLS_SERVER];

describe('authz mcp-proxy start-up checks', () => {
  beforeAll(() => ensureProxyBuilt());

  it('two upstream tools whose derived actions collide stop the proxy (exit 1), naming both and the action', async () => {
    const { config } = scratch('agent_id: bot\nserver: tools\n');
    const r = await runProxyToExit(['--config', config, ...upstream], { ...ENV, TOOLS_SET: 'collide' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'authz mcp-proxy: cannot start: the upstream\'s tools: tools "Write-File" and "write_file" would all be decided as tools.write_file',
    );
    expect(r.stderr).toContain('map them to actions of their own');
  });

  it('a collision between a derived action and a mapped one stops it too; mapping the tool apart lets it start', async () => {
    const clash = scratch('agent_id: bot\nserver: tools\ntools:\n  charge: { action: tools.write_file }\n');
    const r = await runProxyToExit(['--config', clash.config, ...upstream], ENV);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('tools "charge" and "write_file" would all be decided as tools.write_file');

    const apart = scratch('agent_id: bot\nserver: tools\ntools:\n  "Write-File": { action: files.write_other }\n');
    const proxy = await startStdioProxy(['--config', apart.config], { ...ENV, TOOLS_SET: 'collide' });
    await proxy.close();
  });

  it('several tools mapped explicitly to one action are a choice, not a collision', async () => {
    const shared = scratch(
      'agent_id: bot\nserver: tools\ntools:\n  write_file: { action: files.write }\n  "Write-File": { action: files.write }\n',
    );
    const proxy = await startStdioProxy(['--config', shared.config], { ...ENV, TOOLS_SET: 'collide' });
    expect(proxy.stderr()).not.toContain('collides');
    await proxy.close();
  });

  it('a mapped action that breaks the grammar stops the proxy with every problem of the file', async () => {
    const { config } = scratch(
      'agent_id: bot\nserver: tools\ntools:\n  write_file: { action: Files.Write, resource: "file:{}" }\n  charge: { action: "payments.*" }\n',
    );
    const r = await runProxyToExit(['--config', config, ...upstream], ENV);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`invalid configuration ${config}: 3 problems:`);
    expect(r.stderr).toContain(
      'tools.write_file.action: "Files.Write" is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)',
    );
    expect(r.stderr).toContain('tools.write_file.resource: empty placeholder "{}"');
    expect(r.stderr).toContain('tools.charge.action: "payments.*" is not an action');
  });

  it('a configuration without agent_id or server, or with unknown fields, stops it', async () => {
    const { config } = scratch('server: ""\nagent: bot\n');
    const r = await runProxyToExit(['--config', config, ...upstream], ENV);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('unknown field "agent"');
    expect(r.stderr).toContain('agent_id: required');
    expect(r.stderr).toContain('server: required');
  });

  it('usage errors exit 2 with the usage', async () => {
    const { config } = scratch('agent_id: bot\nserver: tools\n');
    const noUpstream = await runProxyToExit(['--config', config], ENV);
    expect(noUpstream.code).toBe(2);
    expect(noUpstream.stderr).toContain('missing the upstream: a command after -- or --upstream-url URL');
    expect(noUpstream.stderr).toContain('usage: authz mcp-proxy --config FILE');
    const noKey = await runProxyToExit(['--config', config, ...upstream], { AUTHZ_URL: ENV.AUTHZ_URL });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('give --key or set AUTHZ_API_KEY');
    const badListen = await runProxyToExit(['--config', config, '--listen', 'nowhere', ...upstream], ENV);
    expect(badListen.code).toBe(2);
    expect(badListen.stderr).toContain('--listen "nowhere": expected HOST:PORT');
  });

  it('an upstream that cannot start is reported (exit 1)', async () => {
    const { config } = scratch('agent_id: bot\nserver: tools\n');
    const r = await runProxyToExit(['--config', config, '--', '/nonexistent/mcp-server'], ENV);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot connect to the upstream MCP server');
  });
});
