#!/usr/bin/env node
// The `authz` command. The TypeScript sources are compiled to dist/ by `npm run build`
// (run automatically by `npm ci` / `npm install` through the prepare script).
// `serve`, `keys` and `push` are the runtime's (they run or call the service);
// `mcp-proxy` is the MCP enforcement proxy of clients/mcp-proxy (it calls the service);
// `replay` is the compiler's but asynchronous (it streams the service's decisions);
// every other command is the compiler's CLI (`main` of agent-authz/compiler).
import { existsSync } from 'node:fs';

const args = process.argv.slice(2);
const runtime = {
  serve: ['../dist/runtime/serve.js', 'serve'],
  keys: ['../dist/runtime/cli/keys.js', 'keysCommand'],
  push: ['../dist/runtime/cli/push.js', 'pushCommand'],
  'mcp-proxy': ['../dist/clients/mcp-proxy/cli.js', 'mcpProxyCommand'],
  replay: ['../dist/compiler/index.js', 'replayCommand'],
}[args[0]];
const entry = new URL(runtime ? runtime[0] : '../dist/compiler/index.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('authz: dist/ is missing; run `npm run build` (npm ci does it) first\n');
  process.exit(2);
}
const mod = await import(entry.href);
if (args[0] === 'replay') {
  // Exit once everything written has been flushed (a large report to a pipe), without
  // waiting for idle keep-alive connections to the service to time out.
  const code = await mod.replayCommand(args.slice(1));
  process.stderr.write('', () => process.stdout.write('', () => process.exit(code)));
} else if (runtime) {
  const code = await mod[runtime[1]](args.slice(1));
  // The proxy's connections (keep-alive sockets to the service) must not keep it running once its client is gone.
  if (code !== 0 || args[0] === 'mcp-proxy') process.exit(code);
} else {
  process.exitCode = mod.main(args);
}
