#!/usr/bin/env node
// The `authz` command. The TypeScript sources are compiled to dist/ by `npm run build`
// (run automatically by `npm ci` / `npm install` through the prepare script).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/compiler/cli/main.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('authz: dist/ is missing; run `npm run build` (npm ci does it) first\n');
  process.exit(2);
}
const { main } = await import(cli.href);
process.exitCode = main(process.argv.slice(2));
