/**
 * What a migrated store's schema is, as comparable data: the public schema's
 * tables (with partition keys and bounds), columns, constraints, indexes,
 * triggers, sequences and functions (pg_get_functiondef: signature, attributes
 * and body). Used to check that two ways of migrating a store end alike.
 */
import type { SqlOrTx } from '../../runtime/store/connect.js';

export interface Catalog {
  tables: string[];
  columns: string[];
  constraints: string[];
  indexes: string[];
  triggers: string[];
  sequences: string[];
  /** name(identity arguments) -> pg_get_functiondef. */
  functions: Record<string, string>;
}

const texts = async (sql: SqlOrTx, query: string): Promise<string[]> =>
  ((await sql.unsafe(query)) as unknown as Array<{ t: string }>).map((r) => r.t).sort();

export async function catalog(sql: SqlOrTx): Promise<Catalog> {
  const ns = `(select oid from pg_namespace where nspname = 'public')`;
  const functions: Record<string, string> = {};
  const procs = (await sql.unsafe(`
    select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name, pg_get_functiondef(p.oid) as def
    from pg_proc p where p.pronamespace = ${ns}`)) as unknown as Array<{ name: string; def: string }>;
  for (const p of procs) functions[p.name] = p.def;
  return {
    tables: await texts(
      sql,
      `
      select c.relname || ' ' || c.relkind::text || coalesce(' key ' || pg_get_partkeydef(c.oid), '')
             || coalesce(' bound ' || pg_get_expr(c.relpartbound, c.oid), '') as t
      from pg_class c where c.relnamespace = ${ns} and c.relkind in ('r', 'p', 'v', 'm', 'f')`,
    ),
    columns: await texts(
      sql,
      `
      select c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
             || case when a.attnotnull then ' not null' else '' end
             || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
             || coalesce(' collate ' || co.collname, '') as t
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid and c.relnamespace = ${ns} and c.relkind in ('r', 'p', 'v', 'm', 'f')
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      left join pg_collation co on co.oid = a.attcollation and a.attcollation <> (select oid from pg_collation where collname = 'default')
      where a.attnum > 0 and not a.attisdropped`,
    ),
    constraints: await texts(
      sql,
      `
      select conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) as t
      from pg_constraint where connamespace = ${ns}`,
    ),
    indexes: await texts(sql, `select indexdef as t from pg_indexes where schemaname = 'public'`),
    triggers: await texts(
      sql,
      `
      select pg_get_triggerdef(t.oid) as t from pg_trigger t join pg_class c on c.oid = t.tgrelid
      where c.relnamespace = ${ns} and not t.tgisinternal`,
    ),
    sequences: await texts(
      sql,
      `select c.relname as t from pg_class c where c.relnamespace = ${ns} and c.relkind = 'S'`,
    ),
    functions,
  };
}
