/**
 * The two requests `authz replay` makes to the service (with fetch, no runtime
 * code): the service's current time, and the decision export as a stream.
 *
 * The service's time: the `Date` header of its answer to an authenticated
 * `GET /v1/decisions?limit=1` (which also checks the key and its scope before
 * the export starts). The service sets that header from its own clock, so the
 * window follows the test clock too; an answer without one falls back to this
 * machine's clock, with a warning.
 */

export interface Service {
  url: string;
  key: string;
}

/** A failed request: what to print, and the answer's status (0: no answer). */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

async function get(service: Service, path: string, accept: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${service.key}`, accept } });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw new ServiceError(`cannot reach ${service.url}: ${(e as Error).message}${cause ? ` (${cause})` : ''}`);
  }
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {
    error = undefined;
  }
  const what = error
    ? `${error.code ?? '(no code)'}: ${error.message ?? ''}`
    : `${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`;
  throw new ServiceError(`GET ${path.split('?')[0]} answered ${response.status} ${what}`, response.status);
}

/**
 * The service's current time in ms since the epoch, from its `Date` header;
 * null when the answer has none (or an unreadable one).
 */
export async function serviceTime(service: Service): Promise<number | null> {
  const response = await get(service, '/v1/decisions?limit=1', 'application/json');
  await response.body?.cancel().catch(() => {});
  const date = response.headers.get('date');
  const t = date ? Date.parse(date) : NaN;
  return Number.isNaN(t) ? null : t;
}

/** The export's body, streamed: `GET /v1/decisions/export?since=ISO`. */
export async function openExport(service: Service, since: string): Promise<AsyncIterable<Uint8Array>> {
  const response = await get(
    service,
    `/v1/decisions/export?since=${encodeURIComponent(since)}`,
    'application/x-ndjson',
  );
  if (!response.body) throw new ServiceError('the export answered without a body', response.status);
  return response.body as unknown as AsyncIterable<Uint8Array>;
}
