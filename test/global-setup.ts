/**
 * Vitest global setup: provides a PostgreSQL admin URL (`inject('pgAdminUrl')`)
 * to the storage tests, once per `vitest run`.
 *
 * - `DATABASE_URL` set → that server is used as is (it must allow CREATE DATABASE).
 * - otherwise a throwaway cluster is created: `initdb`/`pg_ctl` from PATH or
 *   `/usr/lib/postgresql/<newest>/bin`; as root they run as the `postgres` user
 *   (`runuser`), created when missing. The cluster lives in a temp dir under
 *   /tmp, listens on 127.0.0.1 on a free port with durability turned off, and is
 *   stopped (`-m immediate`) and deleted in teardown.
 *
 * When no PostgreSQL can be found or started the run goes on: `pgAdminUrl` is ''
 * and `pgSetupError` says why, and only the tests that need PostgreSQL fail
 * (test/helpers/postgres.ts throws that reason).
 */
import type { TestProject } from 'vitest/node';
import { startCluster, type Cluster } from '../scripts/pg-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the test PostgreSQL server ('' when there is none). */
    pgAdminUrl: string;
    /** Why there is no PostgreSQL server ('' when there is one). */
    pgSetupError: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('pgAdminUrl', external);
    project.provide('pgSetupError', '');
    return async () => {};
  }
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster();
    project.provide('pgAdminUrl', cluster.url);
    project.provide('pgSetupError', '');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    console.warn(`[global-setup] no PostgreSQL for the storage tests: ${reason}`);
    project.provide('pgAdminUrl', '');
    project.provide('pgSetupError', reason);
  }
  return async () => {
    await cluster?.stop();
  };
}
