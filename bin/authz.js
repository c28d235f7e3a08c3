#!/usr/bin/env node
// The `authz` command. The TypeScript sources are compiled to dist/ by `npm run build`
// (run automatically by `npm ci` / `npm install` through the prepare script).
// `serve` is the runtime; every other command is the compiler's CLI.
import { existsSync } from 'node:fs';

const args = process.argv.slice(2);
const target = args[0] === 'serve' ? '../dist/runtime/serve.js' : '../dist/compiler/cli/main.js';
const entry = new URL(target, import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('authz: dist/ is missing; run `npm run build` (npm ci does it) first\n');
  process.exit(2);
}
const mod = await import(entry.href);
if (args[0] === 'serve') {
  const code = await mod.serve(args.slice(1));
  if (code !== 0) process.exit(code);
} else {
  process.exitCode = mod.main(args);
}
