/**
 * `authz keys rotate [--url URL] [--admin-token TOKEN]`: asks a running service to
 * rotate its permit signing key (POST /admin/signing-keys/rotate). URL and token
 * default to AUTHZ_URL (http://127.0.0.1:8080) and AUTHZ_ADMIN_TOKEN.
 */
import { parseArgs } from 'node:util';

export async function keysCommand(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { url: { type: 'string' }, 'admin-token': { type: 'string' } } }));
  } catch (e) {
    process.stderr.write(`authz keys: ${(e as Error).message}\n`);
    return 2;
  }
  if (sub !== 'rotate') {
    process.stderr.write('usage: authz keys rotate [--url URL] [--admin-token TOKEN]\n');
    return 2;
  }
  const url = (values.url ?? process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  const token = values['admin-token'] ?? process.env.AUTHZ_ADMIN_TOKEN;
  if (!token) {
    process.stderr.write('authz keys rotate: give --admin-token or set AUTHZ_ADMIN_TOKEN\n');
    return 2;
  }
  let response: Response;
  try {
    response = await fetch(`${url}/admin/signing-keys/rotate`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  } catch (e) {
    process.stderr.write(`authz keys rotate: cannot reach ${url}: ${(e as Error).message}\n`);
    return 1;
  }
  const body = (await response.json().catch(() => ({}))) as { kid?: string; error?: { code: string; message: string } };
  if (!response.ok) {
    process.stderr.write(`authz keys rotate: ${response.status} ${body.error?.code ?? ''} ${body.error?.message ?? ''}\n`);
    return 1;
  }
  process.stdout.write(`rotated: new signing key ${body.kid}; the previous key stays in the JWKS until its tokens expire\n`);
  return 0;
}
