/**
 * One delivery attempt over HTTP: POST the bytes, 2xx within the timeout is
 * success. Redirects are not followed (a 3xx is a failure). The connection goes
 * only to an address the URL rules allow, checked on the very resolution used to
 * connect (no DNS-rebinding window); literal addresses are checked before.
 */
import http from 'node:http';
import https from 'node:https';
import { checkWebhookUrl, guardedLookup, type UrlRules } from './url-policy.js';

export interface SendResult {
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 256 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

export function sendWebhook(url: string, body: Buffer, headers: Record<string, string>, rules: UrlRules, timeoutMs: number, now: () => number = Date.now): Promise<SendResult> {
  const started = now();
  const done = (status_code: number | null, error: string | null): SendResult => ({ status_code, error, duration_ms: Math.max(0, Math.round(now() - started)) });
  const checked = checkWebhookUrl(url, rules);
  if (!checked.ok) return Promise.resolve(done(null, `URL refused: ${checked.reason}`));
  const target = checked.url;
  const isHttps = target.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
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
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': 'agent-authz-webhooks/1' },
    });
    const timer = setTimeout(() => {
      request.destroy(new Error(`no response within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    request.on('response', (response) => {
      // Read (and drop) the body so the connection can be reused.
      response.resume();
      response.on('end', () => finish(done(response.statusCode ?? null, null)));
      response.on('error', (e) => finish(done(response.statusCode ?? null, e.message)));
    });
    request.on('error', (e: NodeJS.ErrnoException) => finish(done(null, e.code === 'WEBHOOK_ADDRESS_FORBIDDEN' ? `address refused: ${e.message}` : e.message)));
    request.end(body);
  });
}
