/**
 * The dependency tree agrees with the Node versions the project declares: every
 * package in package-lock.json whose `engines.node` is set admits the lowest
 * version package.json's `engines.node` allows (so `npm ci` on it warns no
 * EBADENGINE). cookie@2 (through fastify's light-my-request) wanted Node >= 22:
 * package.json's `overrides` keeps light-my-request on cookie 1.x, whose API it
 * uses the same way.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { admits, lowestAdmitted } from './node-range.js';
import type { JsonObject } from '../helpers/json.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => JSON.parse(readFileSync(`${ROOT}${file}`, 'utf8')) as JsonObject;

describe('engines.node across the dependency tree', () => {
  const pkg = read('package.json');
  const lock = read('package-lock.json');
  const lowest = lowestAdmitted(pkg.engines.node as string);

  it('reads the ranges the tree uses', () => {
    const cases: Array<[string, string, boolean]> = [
      ['>=20.19', '20.19.0', true],
      ['>=20.19', '20.18.9', false],
      ['>=22', '20.19.0', false],
      ['^20.19.0 || >=22.12.0', '20.19.0', true],
      ['^20.19.0 || >=22.12.0', '22.11.0', false],
      ['^20.0.0 || ^22.0.0 || >=24.0.0', '23.1.0', false],
      ['18 || 20 || >=22', '20.19.0', true],
      ['18 || 20 || >=22', '21.0.0', false],
      ['10.* || >= 12.*', '11.2.0', false],
      ['10.* || >= 12.*', '20.19.0', true],
      ['>=16 || 14 >=14.17', '14.16.0', false],
      ['>=16 || 14 >=14.17', '14.18.0', true],
      ['^8.16.0 || ^10.6.0 || >=11.0.0', '20.19.0', true],
      ['^10 || ^12 || ^13.7 || ^14 || >=15.0.1', '13.6.0', false],
      ['>= 10.x', '20.19.0', true],
      ['>=9.4.0 || ^8.9.4', '8.10.0', true],
      ['^0.2.3', '0.3.0', false],
      ['~1.2', '1.2.9', true],
      ['~1.2', '1.3.0', false],
      ['<=20.18', '20.18.5', true],
      ['*', '20.19.0', true],
    ];
    for (const [range, version, expected] of cases)
      expect(admits(range, version), `${range} admits ${version}`).toBe(expected);
    expect(() => admits('1.0.0 - 2.0.0', '1.5.0')).toThrow();
    expect(() => admits('>=latest', '1.0.0')).toThrow();
    expect(lowest).toBe('20.19.0');
  });

  it("every package admits the project's lowest Node (package.json engines.node)", () => {
    const packages = Object.entries(
      lock.packages as Record<string, { version?: string; engines?: { node?: string } | string[] }>,
    );
    expect(packages.length).toBeGreaterThan(100);
    const refusing: string[] = [];
    let checked = 0;
    for (const [path, info] of packages) {
      const range = !Array.isArray(info.engines) ? info.engines?.node : undefined;
      if (range === undefined) continue;
      checked++;
      if (!admits(range, lowest))
        refusing.push(`${path.replace(/^.*node_modules\//, '') || pkg.name}@${info.version}: engines.node ${range}`);
    }
    expect(checked).toBeGreaterThan(50);
    expect(
      refusing,
      `these want a newer Node than ${lowest}: override them (package.json "overrides") or raise engines.node`,
    ).toEqual([]);
  });

  it('the override of cookie under light-my-request is in force in the lock', () => {
    expect(pkg.overrides?.['light-my-request']?.cookie).toBe('^1.1.1');
    const cookies = Object.fromEntries(
      Object.entries(lock.packages as Record<string, { version: string }>)
        .filter(([path]) => /(^|\/)node_modules\/cookie$/.test(path))
        .map(([path, info]) => [path, info.version.split('.')[0]]),
    );
    // The one light-my-request uses is 1.x; no cookie 2 (Node 22) anywhere in the tree.
    expect(cookies['node_modules/light-my-request/node_modules/cookie'] ?? cookies['node_modules/cookie']).toBe('1');
    expect(Object.values(cookies)).not.toContain('2');
  });
});
