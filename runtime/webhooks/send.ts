/**
 * One delivery attempt over HTTP: POST the bytes, 2xx within the timeout is
 * success. Redirects are not followed (a 3xx is a failure). The connection goes
 * only to an address the URL rules allow, checked on the very resolution used to
 * connect (no DNS-rebinding window); literal addresses are checked before.
 *
 * The status line is the answer. Its body is read only so that the connection
 * can be reused, and at most {@link RESPONSE_READ_LIMIT} bytes of it: a longer
 * (or endless) body closes the connection there, and a body still arriving at
 * the timeout is cut off, the status recorded as it came.
 */
import http from 'node:http';
import https from 'node:https';
import { checkWebhookUrl, guardedLookup, type UrlRules } from './url-policy.js';

export interface SendResult {
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/** The most of an answer's body that is read (64 KiB); past it the connection is closed. */
export const RESPONSE_READ_LIMIT = 64 * 1024;

/** The error of an attempt cut off by `signal` (the dispatcher stopping). */
export const STOPPED = 'the dispatcher stopped before an answer';

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 256 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

export function sendWebhook(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  rules: UrlRules,
  timeoutMs: number,
  now: () => number = Date.now,
  signal?: AbortSignal,
): Promise<SendResult> {
  const started = now();
  const done = (status_code: number | null, error: string | null): SendResult => ({
    status_code,
    error,
    duration_ms: Math.max(0, Math.round(now() - started)),
  });
  const checked = checkWebhookUrl(url, rules);
  if (!checked.ok) return Promise.resolve(done(null, `URL refused: ${checked.reason}`));
  const target = checked.url;
  const isHttps = target.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    /** The answer's status, once its head arrived. */
    let status: number | null = null;
    const finish = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const request = (isHttps ? https : http).request(target, {
      method: 'POST',
      agent: isHttps ? agents.https : agents.http,
      lookup: guardedLookup(rules),
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': 'agent-authz-webhooks/1',
      },
    });
    const cutOff = (why: string) => {
      // Answered in time, the body still coming: the status stands.
      if (status !== null) finish(done(status, null));
      request.destroy(new Error(why));
    };
    const timer = setTimeout(() => cutOff(`no response within ${timeoutMs / 1000} s`), timeoutMs);
    // The dispatcher stopping: cut off as a timeout would (the caller gives the attempt back).
    const onAbort = () => cutOff(STOPPED);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    request.once('close', () => signal?.removeEventListener('abort', onAbort));
    request.on('response', (response) => {
      status = response.statusCode ?? null;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read <= RESPONSE_READ_LIMIT) return;
        // Enough: stop reading and close the connection (it cannot be reused mid-body).
        finish(done(status, null));
        request.destroy();
      });
      // Read to the end (the connection goes back to the pool), or cut off by the
      // other side: either way the status is the answer.
      response.on('end', () => finish(done(status, null)));
      response.on('error', () => finish(done(status, null)));
      response.on('close', () => finish(done(status, null)));
    });
    request.on('error', (e: NodeJS.ErrnoException) => {
      if (status !== null) finish(done(status, null));
      else finish(done(null, e.code === 'WEBHOOK_ADDRESS_FORBIDDEN' ? `address refused: ${e.message}` : e.message));
    });
    request.end(body);
  });
}
