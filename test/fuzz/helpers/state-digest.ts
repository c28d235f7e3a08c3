/**
 * A digest of what the store holds: per table, the md5 of its rows as text in a
 * fixed order. Tables are found in the catalogue, so a new table is covered
 * without touching this file. Left out: `schema_migrations`, and the platform
 * limit's rows (`rate_limits` keyed `key:...`), which every authenticated request
 * consumes by design, rejected or not.
 *
 * With a tenant, only rows of that account (and environment, where the table has
 * one) are digested: what isolation tests compare for the tenant not addressed.
 */
import type { SqlOrTx } from '../../../runtime/store/connect.js';

export interface Tenant {
  accountId: string;
  environment: 'test' | 'live';
}

export type StateDigest = Record<string, string>;

const EXCLUDED_TABLES = new Set(['schema_migrations']);
const EXCLUDED_ROWS: Record<string, string> = { rate_limits: `x.limiter_key not like 'key:%'` };

interface TableInfo {
  name: string;
  hasAccount: boolean;
  hasEnvironment: boolean;
}

const tableCache = new WeakMap<object, Promise<TableInfo[]>>();

async function tables(sql: SqlOrTx): Promise<TableInfo[]> {
  let cached = tableCache.get(sql);
  if (!cached) {
    cached = (async () => {
      const rows = await sql<Array<{ table_name: string; has_account: boolean; has_environment: boolean }>>`
        select t.table_name,
               exists (select 1 from information_schema.columns c where c.table_schema = t.table_schema and c.table_name = t.table_name and c.column_name = 'account_id') as has_account,
               exists (select 1 from information_schema.columns c where c.table_schema = t.table_schema and c.table_name = t.table_name and c.column_name = 'environment') as has_environment
        from information_schema.tables t
        where t.table_schema = 'public' and t.table_type = 'BASE TABLE'
        order by t.table_name`;
      return rows
        .filter((r) => !EXCLUDED_TABLES.has(r.table_name))
        .map((r) => ({ name: r.table_name, hasAccount: r.has_account, hasEnvironment: r.has_environment }));
    })();
    tableCache.set(sql, cached);
  }
  return cached;
}

/** One round trip: every table's digest. */
export async function stateDigest(sql: SqlOrTx, tenant?: Tenant): Promise<StateDigest> {
  const infos = await tables(sql);
  if (infos.length === 0) throw new Error('stateDigest: no tables found');
  const parts = infos
    .filter((t) => !tenant || t.hasAccount || t.name === 'accounts')
    .map((t) => {
      const where: string[] = [];
      if (EXCLUDED_ROWS[t.name]) where.push(EXCLUDED_ROWS[t.name]!);
      if (tenant) {
        where.push(t.name === 'accounts' ? 'x.id = $1' : 'x.account_id = $1');
        if (t.hasEnvironment) where.push('x.environment = $2');
      }
      const filter = where.length > 0 ? `where ${where.join(' and ')}` : '';
      return `select '${t.name}' as name, count(*)::int as n, md5(coalesce(string_agg(x::text, E'\\n' order by x::text), '')) as h from "${t.name}" x ${filter}`;
    });
  const rows = await sql.unsafe<Array<{ name: string; n: number; h: string }>>(
    parts.join('\nunion all\n'),
    tenant ? [tenant.accountId, tenant.environment] : [],
  );
  return Object.fromEntries(rows.map((r) => [r.name, `${r.n}:${r.h}`]));
}
