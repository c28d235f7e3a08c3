/**
 * `newId` (runtime/ids.ts) and its SQL mirror `authz_new_id`
 * (runtime/store/migrations/008_ids.sql), on PostgreSQL and on the embedded store:
 * the same shape for every prefix, the same time part at the same clock, and
 * ids of both origins sorting by the time they were made, in JavaScript's
 * string order and in the database's byte order (COLLATE "C", the log's
 * partition keys) alike. The partition bounds (`idRange`, `authz_id_floor`)
 * are held to the same time part.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../runtime/clock.js';
import { idRange, idTime, newId, type IdPrefix } from '../../../runtime/ids.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';

const PREFIXES = ['dec', 'pol', 'evt', 'acc', 'we', 'whd', 'key', 'req'] as const satisfies readonly IdPrefix[];
// Every IdPrefix is listed: a prefix added to the type and not here fails the typecheck.
const EVERY_PREFIX_LISTED: [Exclude<IdPrefix, (typeof PREFIXES)[number]>] extends [never] ? true : never = true;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SHAPE = /^([a-z]+)_([0-9A-Za-z]{8})([0-9A-Za-z]{16})$/;
const T0 = Date.parse('2026-11-26T16:20:00.123Z');

/** Times whose time part differs in its low, middle and high characters: the epoch, 61/62 carries, ms ticks, up to the year 8000. */
const TIMES = [
  0,
  61,
  62,
  62 ** 2 - 1,
  62 ** 2,
  62 ** 5,
  T0 - 1,
  T0,
  T0 + 1,
  Date.parse('2000-02-29T23:59:59.999Z'),
  Date.parse('2038-01-19T03:14:08.000Z'),
  Date.parse('8000-01-01T00:00:00.000Z'),
];

/** The byte order of ASCII strings (what COLLATE "C" sorts by). */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** How often each base62 character occurs in the random parts of `ids`. */
function randomCharCounts(ids: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) for (const c of SHAPE.exec(id)![3]!) counts.set(c, (counts.get(c) ?? 0) + 1);
  return counts;
}

describe('the examples of runtime/ids.ts', () => {
  it('hold: the id of 2026-11-26 and the id range of 2026-11-21', () => {
    expect(new Date(idTime('dec_0Vc61Q613aQJNECs8Lrjz8HE')!).toISOString()).toBe('2026-11-26T16:09:07.381Z');
    expect(idRange('dec', Date.parse('2026-11-21'), Date.parse('2026-11-22'))).toEqual({
      lo: 'dec_0VbYqoN6',
      hi: 'dec_0VbehKxU',
    });
  });
});

describe.each(STORE_KINDS)('newId and authz_new_id (%s store)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store?.dispose());

  /** authz_new_id(prefix, at), at given to the database as this ISO time. */
  async function sqlId(prefix: string, at: string): Promise<string> {
    const [row] = await store.sql<{ id: string }[]>`select authz_new_id(${prefix}, ${at}::timestamptz) as id`;
    return row!.id;
  }

  it('lists every prefix', () => {
    expect(EVERY_PREFIX_LISTED).toBe(true);
  });

  it('makes ids of one shape for every prefix: the prefix, "_", 8 time and 16 random base62 characters', async () => {
    const clock = new ManualClock(T0);
    for (const prefix of PREFIXES) {
      const ts = newId(prefix, clock.now());
      const sql = await sqlId(prefix, new Date(clock.now()).toISOString());
      for (const id of [ts, sql]) {
        expect(id).toMatch(SHAPE);
        expect(id).toHaveLength(prefix.length + 1 + 24);
        expect(SHAPE.exec(id)![1]).toBe(prefix);
      }
    }
  });

  it('writes the same time part at the same clock, and idTime reads it back from both', async () => {
    for (const ms of TIMES) {
      const clock = new ManualClock(ms);
      const ts = newId('evt', clock.now());
      const sql = await sqlId('evt', new Date(clock.now()).toISOString());
      expect(sql.slice(0, 12), new Date(ms).toISOString()).toBe(ts.slice(0, 12));
      expect(idTime(ts)).toBe(ms);
      expect(idTime(sql)).toBe(ms);
      expect(ts.slice(0, 12)).toBe(idRange('evt', ms, ms + 1).lo);
    }
  });

  it('takes the millisecond the time falls in (microseconds are dropped, not rounded), as newId floors', async () => {
    const sql = await sqlId('dec', '2026-11-26T16:20:00.123999Z');
    expect(idTime(sql)).toBe(T0);
    expect(sql.slice(0, 12)).toBe(newId('dec', T0 + 0.999).slice(0, 12));
  });

  it("the SQL partition bound authz_id_floor is idRange's lower bound at the same time", async () => {
    for (const ms of TIMES) {
      const [row] = await store.sql<
        { lo: string }[]
      >`select authz_id_floor('whd', ${new Date(ms).toISOString()}::timestamptz) as lo`;
      expect(row!.lo).toBe(idRange('whd', ms, ms + 1).lo);
    }
  });

  it('orders ids of both origins by the time they were made, in JavaScript and in the database alike', async () => {
    const clock = new ManualClock(T0 - 150);
    const made: Array<{ id: string; ms: number }> = [];
    // 300 clock ticks of 1 ms and, at every third, one of 62 ms (a carry into the second time character);
    // at each tick one id from each side, so ids of both origins share a millisecond.
    for (let tick = 0; tick < 300; tick++) {
      clock.set(clock.now() + (tick % 3 === 0 ? 62 : 1));
      made.push({ id: newId('dec', clock.now()), ms: clock.now() });
      made.push({ id: await sqlId('dec', new Date(clock.now()).toISOString()), ms: clock.now() });
    }
    const shuffled = [...made].reverse(); // not in the order they were made
    const inJs = shuffled.map((m) => m.id).sort(byteOrder);
    const inSql = (
      await store.sql<
        { id: string }[]
      >`select id from unnest(${shuffled.map((m) => m.id)}::text[]) as u(id) order by id collate "C"`
    ).map((r) => r.id);
    expect(inSql).toEqual(inJs);
    const timeOf = new Map(made.map((m) => [m.id, m.ms]));
    const times = inJs.map((id) => timeOf.get(id)!);
    expect(times).toEqual(made.map((m) => m.ms).sort((a, b) => a - b));
    // Every id sorts inside the partition range of its own millisecond, whoever made it.
    for (const { id, ms } of made) {
      const { lo, hi } = idRange('dec', ms, ms + 1);
      expect(byteOrder(id, lo)).toBe(1);
      expect(byteOrder(id, hi)).toBe(-1);
    }
  });

  it('draws the random part from all 62 characters without a visible bias, on both sides, and never repeats', async () => {
    const at = new Date(T0).toISOString();
    const sqlIds = (
      await store.sql<
        { id: string }[]
      >`select authz_new_id('req', ${at}::timestamptz) as id from generate_series(1, 2000)`
    ).map((r) => r.id);
    const tsIds = Array.from({ length: 2000 }, () => newId('req', T0));
    for (const ids of [sqlIds, tsIds]) {
      expect(new Set(ids).size).toBe(ids.length);
      const counts = randomCharCounts(ids);
      expect([...counts.keys()].sort(byteOrder).join('')).toBe(ALPHABET);
      // 32,000 characters: about 516 of each (standard deviation about 22).
      const expected = (ids.length * 16) / 62;
      for (const [c, n] of counts) {
        expect(n, c).toBeGreaterThan(expected * 0.7);
        expect(n, c).toBeLessThan(expected * 1.3);
      }
    }
  });
});
