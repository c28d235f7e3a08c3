/**
 * What the CLI commands that talk to a running service (`authz keys`, `authz push`)
 * share: where they write, the service URL and credentials from flags or the
 * environment, and one request helper that prints any failure (status, error
 * code, message and each `error.details` entry) so that every command reports
 * errors the same way.
 */
import { type CliIo, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, processIo } from '../../compiler/index.js';
import type { ErrorBody } from '../../clients/typescript/wire.js';

export { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE };

/** Where a command writes (each call is one line; a missing newline is added). Tests pass their own. */
export type CommandIo = Pick<CliIo, 'out' | 'err'>;
export const defaultIo: CommandIo = processIo;

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** The service's base URL: the flag, else AUTHZ_URL, else http://127.0.0.1:8080 (no trailing slash). */
export function serviceUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return (flag || env.AUTHZ_URL || DEFAULT_URL).replace(/\/+$/, '');
}

/** A bearer credential: the flag, else the environment variable; undefined when neither is set. */
export function credential(
  flag: string | undefined,
  variable: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return flag || env[variable] || undefined;
}

export interface ApiRequest {
  /** Prefix of every message, e.g. `authz keys create`. */
  command: string;
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  token: string;
  /** A JSON value (sent as JSON) or raw bytes (sent as they are, as application/json). */
  body?: unknown;
}

/** An error answer as the CLI reads it: the wire's error body, any part of it possibly missing (an answer from something else). */
type LooseErrorBody = { error?: Partial<ErrorBody['error']> };

/** Why a request failed: `status` null when the service could not be reached, else the answer's status and error code. */
export interface ServiceFailure {
  status: number | null;
  code?: string;
}

/**
 * Sends the request. A 2xx answer resolves to its parsed JSON body; anything else
 * (the service unreachable, an error answer, a body that is not JSON) is printed
 * to `io.err` and resolves to null: the caller exits 1.
 */
export async function callService(io: CommandIo, req: ApiRequest): Promise<Record<string, any> | null> {
  const answer = await askService(io, req);
  return 'failure' in answer ? null : answer.body;
}

/** {@link callService}, saying why it failed (unreachable, or the status and code), for a command whose advice depends on it. */
export async function askService(
  io: CommandIo,
  req: ApiRequest,
): Promise<{ body: Record<string, any> } | { failure: ServiceFailure }> {
  const headers: Record<string, string> = { authorization: `Bearer ${req.token}` };
  let payload: string | Uint8Array | undefined;
  if (req.body instanceof Uint8Array) payload = req.body;
  else if (req.body !== undefined) payload = JSON.stringify(req.body);
  if (payload !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`${req.url}${req.path}`, {
      method: req.method,
      headers,
      ...(payload !== undefined ? { body: payload } : {}),
    });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    io.err(`${req.command}: cannot reach ${req.url}: ${(e as Error).message}${cause ? ` (${cause})` : ''}`);
    return { failure: { status: null } };
  }
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = text === '' ? {} : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    printError(io, req.command, response, body as LooseErrorBody | undefined, text);
    const code = (body as LooseErrorBody | undefined)?.error?.code;
    return { failure: { status: response.status, ...(code ? { code } : {}) } };
  }
  if (body === undefined || typeof body !== 'object' || body === null) {
    io.err(`${req.command}: ${response.status}: the answer is not JSON: ${text.slice(0, 200)}`);
    return { failure: { status: response.status } };
  }
  return { body: body as Record<string, any> };
}

function printError(
  io: CommandIo,
  command: string,
  response: Response,
  body: LooseErrorBody | undefined,
  text: string,
): void {
  const error = body?.error;
  if (!error) {
    // Not one of the service's errors (a proxy, another server on that port).
    io.err(`${command}: ${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`);
    return;
  }
  io.err(`${command}: ${response.status} ${error.code ?? '(no code)'}: ${error.message ?? ''}`);
  for (const d of error.details ?? []) io.err(`  ${d.path ?? '/'}: ${d.message ?? ''}`);
}
