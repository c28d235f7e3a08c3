/**
 * `authz push FILE [--url URL] [--key KEY]`: sends a bundle written by
 * `authz compile` to a running service (PUT /v1/bundle), from CI for instance.
 * The file's bytes are sent as they are. URL defaults to AUTHZ_URL (else
 * http://127.0.0.1:8080), the key (scope policies:write) to AUTHZ_API_KEY.
 * Exit codes: 0 pushed, 1 the service refused it (status, code, message and each
 * problem printed) or could not be reached, 2 usage error (unreadable file, no key).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { callService, credential, DEFAULT_URL, defaultIo, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, serviceUrl, type CommandIo } from './http-client.js';

export const PUSH_USAGE = `usage: authz push FILE [--url URL] [--key KEY]
  FILE   a bundle written by authz compile
  --url  the service (default AUTHZ_URL or ${DEFAULT_URL})
  --key  an API key with scope policies:write (default AUTHZ_API_KEY); the key's environment receives the bundle`;

export async function pushCommand(argv: readonly string[], io: CommandIo = defaultIo): Promise<number> {
  const command = 'authz push';
  const usage = (message: string) => {
    io.err(`${command}: ${message}\n\n${PUSH_USAGE}`);
    return EXIT_USAGE;
  };
  let values: { url?: string; key?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, options: { url: { type: 'string' }, key: { type: 'string' } } }));
  } catch (e) {
    return usage((e as Error).message);
  }
  if (positionals.length !== 1) return usage(positionals.length === 0 ? 'missing the bundle FILE' : `one FILE only (got ${positionals.length})`);
  const file = positionals[0]!;
  const key = credential(values.key, 'AUTHZ_API_KEY');
  if (!key) return usage('give --key or set AUTHZ_API_KEY');
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    io.err(`${command}: cannot read ${file}: ${(e as Error).message}`);
    return EXIT_USAGE;
  }
  const url = serviceUrl(values.url);
  const body = await callService(io, { command, url, token: key, method: 'PUT', path: '/v1/bundle', body: bytes });
  if (!body) return EXIT_PROBLEMS;
  io.out(`pushed: ${body.policies} policies, hash ${body.hash}`);
  return EXIT_OK;
}
