/**
 * fast-check arbitraries for hostile input: odd JSON values, structural
 * mutations of a valid body (drop a field, wrong type, extra field, array for
 * object, huge strings, deep nesting), text-level mutations of its JSON (cut,
 * stray characters, 1e400 / NaN literals, duplicate keys, __proto__), raw bytes,
 * content types, query strings and path parameters.
 */
import fc from 'fast-check';

export type Path = Array<string | number>;

/** Nested arrays/objects `depth` levels deep. */
export function nest(depth: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { n: v };
  return v;
}

const SPECIAL_STRINGS = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e400',
  'null',
  'true',
  '0x10',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\ud83d',
  '💥🔥',
  'é',
  'e\u0301',
  '\u202e',
  '\ufeff',
  '%00',
  '%',
  '../../etc/passwd',
  "' or 1=1 --",
  '${7*7}',
  '<script>',
  '*',
  '**',
  '*.*',
  'orders.read',
  'ORDERS.READ',
  'a.b.c',
  '.',
  'pol_',
  'pol_x',
  'dec_',
  'we_',
  '\n',
  '\t\r',
  'ㅤ',
];
const SPECIAL_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  1e308,
  -1e308,
  5e-324,
  2 ** 53 + 2,
  -(2 ** 63),
  3601,
  1e21,
  // eslint-disable-next-line no-loss-of-precision -- a decimal longer than a double holds is one of the inputs
  123456789.123456789,
];

export const weirdString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...SPECIAL_STRINGS),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer({ min: 257, max: 5000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 5000, max: 300_000 }).map((n) => 'é'.repeat(n)),
);

export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: weirdString },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(...SPECIAL_NUMBERS, null, true, false, [], {}, [[]], { '': '' }, [null], {
      a: { b: { c: {} } },
    }),
  },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 120 }).map((d) => nest(d)) },
  { weight: 1, arbitrary: fc.array(weirdString, { maxLength: 5 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1000, max: 5000 }).map((n) => Array.from({ length: n }, (_, i) => `a${i}`)),
  },
);

/** Every path of a JSON value, the root ([]) included. */
export function paths(value: unknown, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...at, i])));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...at, k]));
  return out;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** A JSON object or array, read and written by the keys of a path. */
type Container = Record<string | number, unknown>;

function setAt(root: unknown, path: Path, fn: (parent: Container, key: string | number) => void): unknown {
  if (path.length === 0) return root;
  let parent = root as Container;
  for (const k of path.slice(0, -1)) parent = parent[k] as Container;
  fn(parent, path[path.length - 1]!);
  return root;
}

type Op =
  | { op: 'drop'; pick: number }
  | { op: 'set'; pick: number; value: unknown }
  | { op: 'extra'; pick: number; key: string; value: unknown }
  | { op: 'wrap'; pick: number }
  | { op: 'root'; value: unknown };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('drop' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('set' as const), pick: fc.nat(), value: weirdValue }),
  fc.record({
    op: fc.constant('extra' as const),
    pick: fc.nat(),
    key: fc.oneof(weirdString, fc.constantFrom('id', 'extra', 'constructor', 'toString')),
    value: weirdValue,
  }),
  fc.record({ op: fc.constant('wrap' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('root' as const), value: weirdValue }),
);

function apply(value: unknown, o: Op): unknown {
  if (o.op === 'root') return clone(o.value);
  const all = paths(value);
  const path = all[o.pick % all.length]!;
  switch (o.op) {
    case 'drop':
      if (path.length === 0) return undefined;
      return setAt(value, path, (p, k) => (Array.isArray(p) ? p.splice(k as number, 1) : delete p[k]));
    case 'set':
      if (path.length === 0) return clone(o.value);
      return setAt(value, path, (p, k) => (p[k] = clone(o.value)));
    case 'extra': {
      const objects = all.filter((p) => {
        let v = value as Container;
        for (const k of p) v = v[k] as Container;
        return v !== null && typeof v === 'object' && !Array.isArray(v);
      });
      if (objects.length === 0) return value;
      const target = objects[o.pick % objects.length]!;
      let v = value as Container;
      for (const k of target) v = v[k] as Container;
      Object.defineProperty(v, o.key, { value: clone(o.value), enumerable: true, configurable: true, writable: true });
      return value;
    }
    case 'wrap':
      if (path.length === 0) return [value];
      return setAt(value, path, (p, k) => (p[k] = [p[k]]));
  }
}

type TextOp =
  | { op: 'none' }
  | { op: 'cut'; at: number }
  | { op: 'insert'; at: number; text: string }
  | { op: 'number'; literal: string }
  | { op: 'bom' }
  | { op: 'dupkey'; value: string }
  | { op: 'proto' }
  | { op: 'trailing'; text: string };

const textOp: fc.Arbitrary<TextOp> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ op: 'none' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cut' as const), at: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('insert' as const),
      at: fc.nat(),
      text: fc.oneof(
        fc.constantFrom('\u0000', '"', '\\', '{', ']', ',', '\\u0000', '\\ud800', '\\x41', '\u2028'),
        fc.string({ maxLength: 3 }),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('number' as const),
      literal: fc.constantFrom(
        '1e400',
        '-1e400',
        'NaN',
        'Infinity',
        '0x10',
        '01',
        '1.',
        '.5',
        '+1',
        '1e-400',
        '123456789012345678901234567890',
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'bom' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('dupkey' as const),
      value: fc.constantFrom('1', 'null', '"x"', '{}', '[]'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'proto' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('trailing' as const),
      text: fc.constantFrom(',', ' x', '}', '\u0000', '{}'),
    }),
  },
);

function applyText(text: string, o: TextOp): string {
  switch (o.op) {
    case 'none':
      return text;
    case 'cut':
      return text.slice(0, o.at % (text.length + 1));
    case 'insert': {
      const at = o.at % (text.length + 1);
      return text.slice(0, at) + o.text + text.slice(at);
    }
    case 'number': {
      const m = /-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text);
      return m ? text.slice(0, m.index) + o.literal + text.slice(m.index + m[0].length) : `${o.literal}`;
    }
    case 'bom':
      return `\ufeff${text}`;
    case 'dupkey': {
      const m = /^\{"((?:[^"\\]|\\.)*)":/.exec(text);
      return m ? `{"${m[1]}":${o.value},${text.slice(1)}` : text;
    }
    case 'proto':
      return text.startsWith('{') && text !== '{}'
        ? `{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},${text.slice(1)}`
        : '{"__proto__":{"polluted":1}}';
    case 'trailing':
      return text + o.text;
  }
}

export interface BodyCase {
  /** The JSON text sent (undefined: no body). */
  text: string | undefined;
  describe: string;
}

/** A valid example body mutated 1-3 times, then maybe damaged as text. */
export function mutatedBody(example: unknown): fc.Arbitrary<BodyCase> {
  return fc.tuple(fc.array(op, { minLength: 1, maxLength: 3 }), textOp).map(([ops, t]) => {
    let value = clone(example);
    for (const o of ops) value = apply(value, o);
    const json = value === undefined ? undefined : JSON.stringify(value);
    const text = json === undefined ? (t.op === 'none' ? undefined : applyText('', t)) : applyText(json, t);
    const shown = (s: string | undefined) =>
      s === undefined ? 'no body' : s.length > 300 ? `${s.slice(0, 300)}... (${s.length} chars)` : s;
    return { text, describe: `${ops.map((o) => o.op).join('+')}/${t.op}: ${shown(text)}` };
  });
}

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json;;',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/jsonx',
  'application/vnd.api+json',
  'application/merge-patch+json',
  '*/*',
  'garbage',
];

/** Raw bytes (often not UTF-8, not JSON) under some content type, or none. */
export const rawBody: fc.Arbitrary<{ bytes: Buffer; contentType: string | undefined }> = fc.record({
  bytes: fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    fc
      .constantFrom(
        '',
        ' ',
        'null',
        '[]',
        '0',
        '"x"',
        '{',
        '{"a":',
        'true',
        'a=1&b=2',
        '\u0000',
        '\ufeff{}',
        '{}\u0000',
      )
      .map((s) => Buffer.from(s)),
    fc.constantFrom(
      Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]),
      Buffer.from([0xc0, 0xaf]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('{"a":"\xff"}', 'latin1'),
    ),
  ),
  contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }),
});

/** A path parameter value, percent-encoded or deliberately raw. */
export const pathParam: fc.Arbitrary<string> = fc.oneof(
  weirdString.filter((s) => s.length < 6000).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
  fc.constantFrom(
    '%',
    '%zz',
    '%00',
    '%C0%AF',
    '%ED%A0%80',
    '%FF',
    '..',
    '.',
    '%2F',
    '%2e%2e',
    'a%20b',
    '*',
    'dec_0',
    'pol_0',
    'we_0',
    'whd_0',
    'evt_0',
  ),
  fc.integer({ min: 4000, max: 6000 }).map((n) => 'a'.repeat(n)),
);

/** A query string: some of the known parameters with odd values, unknown ones, repeats, broken encoding. */
export const queryString: fc.Arbitrary<string> = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom('limit', 'starting_after', 'agent_id', 'type', 'limit', 'bogus', '', '__proto__', 'limit[]'),
        fc.string({ maxLength: 8 }),
      ),
      fc.oneof(
        fc.constantFrom(
          '0',
          '1',
          '100',
          '101',
          '-1',
          '1.5',
          '1e2',
          'abc',
          '',
          'NaN',
          'Infinity',
          '%00',
          '%',
          '%zz',
          '00020',
          ' 5',
          '5 ',
          'true',
          'null',
        ),
        weirdString.filter((s) => s.length < 3000).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
      ),
    ),
    { maxLength: 4 },
  )
  .map((pairs) =>
    pairs.map(([k, v]) => `${k.includes('%') || k.includes('[') ? k : encodeURIComponent(k)}=${v}`).join('&'),
  );
