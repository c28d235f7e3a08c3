/**
 * No hand-written copy of a wire type: runtime/ (the dashboard's JSDoc
 * included) and clients/typescript/ use the types generated from the answer
 * and request schemas (clients/typescript/wire.ts) instead of declaring their
 * own; and no interface or type literal in runtime/ or clients/ copies a
 * request's fields under another name.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  handWrittenRequestShapes,
  handWrittenWireTypes,
  KNOWN_INTERNAL,
  KNOWN_INTERNAL_SHAPES,
  requestShapes,
  WIRE_MODULE,
  wireTypeNames,
} from './wire-declarations.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(folders: RegExp = /^(runtime|clients\/typescript)\//): Record<string, string> {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => folders.test(f));
  return Object.fromEntries(files.map((f) => [f, readFileSync(`${ROOT}${f}`, 'utf8')]));
}

/** `POST /v1/decisions`'s body as runtime/domain/decisions.ts wrote it by hand before it took the generated type. */
const OLD_DECISION_INPUT = `export interface DecisionInput {
  agent_id: string;
  action: string;
  resource?: string | null;
  amount?: number | null;
  amounts?: Record<string, number> | null;
  context?: Record<string, unknown> | null;
  ttl_seconds?: number;
  session_id?: string | null;
  on_behalf_of?: string | null;
  args_digest?: string | null;
}`;

describe('wire types are declared once (the generated module)', () => {
  const names = wireTypeNames(readFileSync(`${ROOT}${WIRE_MODULE}`, 'utf8'));
  const files = sources();

  it('reads the generated names and the files that use them', () => {
    expect(names).toEqual(
      expect.arrayContaining([
        'Decision',
        'Review',
        'Policy',
        'Agent',
        'Event',
        'WebhookEndpoint',
        'WebhookDelivery',
        'Budget',
        'ErrorBody',
        'List',
      ]),
    );
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'runtime/presenters/decision.ts',
        'clients/typescript/types.ts',
        'runtime/dashboard/public/api.js',
      ]),
    );
    expect(files['runtime/dashboard/public/api.js']).toContain(
      "@typedef {import('../../../clients/typescript/wire.js').Decision} Decision",
    );
  });

  it('no interface, type alias or JSDoc typedef elsewhere is named like a wire type', () => {
    expect(handWrittenWireTypes(files, names)).toEqual([]);
  });

  it('each known internal type still exists (the list only shrinks)', () => {
    for (const k of KNOWN_INTERNAL)
      expect(handWrittenWireTypes({ [k.file]: files[k.file] ?? '' }, [k.name]), `${k.file}: ${k.name}`).toEqual([]);
    for (const k of KNOWN_INTERNAL) expect(files[k.file], k.file).toMatch(new RegExp(`(interface|type) ${k.name}\\b`));
  });

  it('refuses hand-written copies and lets imports and re-exports through', () => {
    const bad = {
      'runtime/presenters/x.ts': 'export interface Decision { id: string }',
      'clients/typescript/y.ts': 'namespace N { export type Review = { status: string } }',
      'runtime/dashboard/public/z.js':
        '/**\n * @typedef {object} Agent\n * @property {string} agent_id\n */\n/** @typedef {{ id: string, name: string }} Policy */',
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
      'runtime/presenters/event.ts':
        "import type { Event } from '../../clients/typescript/wire.js';\nexport type EventEnvelope = Event;",
      'runtime/dashboard/public/api.js':
        "/** @typedef {import('../../../clients/typescript/wire.js').Decision} Decision */",
      'runtime/dashboard/public/views/decisions.js': "/** @typedef {import('../api.js').Decision} Decision */",
      [WIRE_MODULE]: 'export interface Decision { id: string }',
    };
    expect(handWrittenWireTypes(good, names)).toEqual([]);
  });

  describe('request shapes', () => {
    const wire = readFileSync(`${ROOT}${WIRE_MODULE}`, 'utf8');
    const requests = requestShapes(wire);
    const everywhere = sources(/^(runtime|clients)\//);

    it('reads the generated request types with their fields', () => {
      expect(requests.map((r) => r.name)).toEqual(
        expect.arrayContaining([
          'DecisionRequest',
          'DecisionResolveRequest',
          'DecisionOutputRequest',
          'SessionLabelsRequest',
          'AuthzenEvaluationRequest',
          'BudgetRemainingQuery',
        ]),
      );
      const decision = requests.find((r) => r.name === 'DecisionRequest')!;
      expect([...decision.required].sort()).toEqual(['action', 'agent_id']);
      expect(decision.fields.size).toBe(10);
      expect(names).toEqual(expect.arrayContaining(['DecisionRequest', 'SessionLabelsRequest', 'DecisionListQuery']));
    });

    it('no interface or type literal in runtime/ or clients/ copies a request', () => {
      expect(handWrittenRequestShapes(everywhere, requests)).toEqual([]);
    });

    it('each known internal shape still exists (the list only shrinks)', () => {
      for (const k of KNOWN_INTERNAL_SHAPES) {
        const file = k.shape.slice(0, k.shape.indexOf(':'));
        expect(handWrittenRequestShapes({ [file]: everywhere[file] ?? '' }, requests, []), k.shape).toContain(k.shape);
      }
    });

    it('refuses the hand-written DecisionInput of old, under any name, and copies of other requests', () => {
      const bad = {
        'runtime/domain/decisions.ts': OLD_DECISION_INPUT,
        'runtime/domain/preview.ts': OLD_DECISION_INPUT.replace('DecisionInput', 'PreviewBody').replace(
          '  args_digest?: string | null;\n',
          '  extra?: boolean;\n',
        ),
        'clients/typescript/types.ts':
          'export type LabelsInput = { labels: string[]; agent_id: string; detail?: string | null };',
        'runtime/routes/permits.ts': 'app.post<{ Body: { token: string } }>(url, handler);',
        'runtime/domain/authzen.ts': 'export interface Evaluation { subject: S; action: A; resource: R; context?: C }',
      };
      expect(handWrittenRequestShapes(bad, requests)).toEqual([
        'runtime/domain/decisions.ts: DecisionInput ~ DecisionRequest',
        'runtime/domain/preview.ts: PreviewBody ~ DecisionRequest',
        'clients/typescript/types.ts: LabelsInput ~ SessionLabelsRequest',
        'runtime/routes/permits.ts: { token } ~ PermitVerifyRequest',
        'runtime/domain/authzen.ts: Evaluation ~ AuthzenEvaluationRequest',
      ]);
    });

    it('lets the generated types, aliases of them, store rows and unrelated shapes through', () => {
      const good = {
        'runtime/domain/decisions.ts':
          "import type { DecisionRequest } from '../../clients/typescript/wire.js';\nexport type DecisionInput = DecisionRequest;",
        'clients/typescript/types.ts':
          "export type LabelsInput = SessionLabelsRequest & { session_id?: string };\nexport type { DecisionRequest } from './wire.js';",
        'runtime/store/decisions.ts': OLD_DECISION_INPUT.replace('DecisionInput', 'DecisionRow'),
        'runtime/domain/limits.ts':
          'interface Key { agent_id: string; resource: string }\ninterface Usage { agent_id: string; session_id: string; on_behalf_of: string; limit: number; unit: string; held: number; consumed: number; period: string; policy_id: string }',
        [WIRE_MODULE]: wire,
      };
      expect(handWrittenRequestShapes(good, requests)).toEqual([]);
    });
  });
});
