/**
 * No hand-written copy of a wire type: runtime/ (the dashboard's JSDoc
 * included) and clients/typescript/ use the types generated from the answer
 * schemas (clients/typescript/wire.ts) instead of declaring their own.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { handWrittenWireTypes, KNOWN_INTERNAL, WIRE_MODULE, wireTypeNames } from './wire-declarations.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(): Record<string, string> {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /^(runtime|clients\/typescript)\//.test(f));
  return Object.fromEntries(files.map((f) => [f, readFileSync(`${ROOT}${f}`, 'utf8')]));
}

describe('wire types are declared once (the generated module)', () => {
  const names = wireTypeNames(readFileSync(`${ROOT}${WIRE_MODULE}`, 'utf8'));
  const files = sources();

  it('reads the generated names and the files that use them', () => {
    expect(names).toEqual(expect.arrayContaining(['Decision', 'Review', 'Policy', 'Agent', 'Event', 'WebhookEndpoint', 'WebhookDelivery', 'Budget', 'ErrorBody', 'List']));
    expect(Object.keys(files)).toEqual(expect.arrayContaining(['runtime/presenters/decision.ts', 'clients/typescript/types.ts', 'runtime/dashboard/public/api.js']));
    expect(files['runtime/dashboard/public/api.js']).toContain("@typedef {import('../../../clients/typescript/wire.js').Decision} Decision");
  });

  it('no interface, type alias or JSDoc typedef elsewhere is named like a wire type', () => {
    expect(handWrittenWireTypes(files, names)).toEqual([]);
  });

  it('each known internal type still exists (the list only shrinks)', () => {
    for (const k of KNOWN_INTERNAL) expect(handWrittenWireTypes({ [k.file]: files[k.file] ?? '' }, [k.name]), `${k.file}: ${k.name}`).toEqual([]);
    for (const k of KNOWN_INTERNAL) expect(files[k.file], k.file).toMatch(new RegExp(`(interface|type) ${k.name}\\b`));
  });

  it('refuses hand-written copies and lets imports and re-exports through', () => {
    const bad = {
      'runtime/presenters/x.ts': 'export interface Decision { id: string }',
      'clients/typescript/y.ts': 'namespace N { export type Review = { status: string } }',
      'runtime/dashboard/public/z.js': '/**\n * @typedef {object} Agent\n * @property {string} agent_id\n */\n/** @typedef {{ id: string, name: string }} Policy */',
      'runtime/dashboard/public/w.js': "/** @typedef {import('../../../clients/typescript/wire.js').Budget} Event */",
    };
    expect(handWrittenWireTypes(bad, names)).toEqual([
      'runtime/presenters/x.ts: Decision',
      'clients/typescript/y.ts: Review',
      'runtime/dashboard/public/z.js: Agent',
      'runtime/dashboard/public/z.js: Policy',
      'runtime/dashboard/public/w.js: Event',
    ]);
    const good = {
      'clients/typescript/types.ts': "export type { Decision } from './wire.js';\nexport type DecisionReview = Review;",
      'runtime/presenters/event.ts': "import type { Event } from '../../clients/typescript/wire.js';\nexport type EventEnvelope = Event;",
      'runtime/dashboard/public/api.js': "/** @typedef {import('../../../clients/typescript/wire.js').Decision} Decision */",
      'runtime/dashboard/public/views/decisions.js': "/** @typedef {import('../api.js').Decision} Decision */",
      [WIRE_MODULE]: 'export interface Decision { id: string }',
    };
    expect(handWrittenWireTypes(good, names)).toEqual([]);
  });
});
