/** The machine and versions table that heads the benchmark reports (bench/run.ts, bench/soak/run.ts). */
import { existsSync, readFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../compiler/index.js';
import { postgresVersion } from '../scripts/pg-cluster.js';

/** An installed package's version, or '-'. */
export function packageVersion(pkg: string): string {
  const file = join(packageRoot(), 'node_modules', pkg, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : '-';
}

/** Markdown rows: CPU, memory, kernel, Node, PostgreSQL (with `postgresNote`), and the given packages' versions. */
export function machineTable(postgresNote: string, packages: readonly string[]): string[] {
  return [
    '| machine | |',
    '| --- | --- |',
    `| CPU | ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'} |`,
    `| memory | ${(totalmem() / 2 ** 30).toFixed(0)} GiB |`,
    `| kernel | Linux ${release()} |`,
    `| Node | ${process.version} |`,
    `| PostgreSQL | ${postgresVersion()} (${postgresNote}) |`,
    `| packages | ${packages.map((p) => `${p} ${packageVersion(p)}`).join(', ')} |`,
  ];
}
