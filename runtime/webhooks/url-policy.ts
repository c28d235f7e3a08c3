/**
 * Webhook URL policy: whether a webhook URL, and each address it resolves to,
 * may be called (SSRF protection).
 *
 * - Live environment: `https` only; test environment: `http` or `https`.
 * - Never: unspecified, link-local (cloud metadata), multicast, broadcast,
 *   reserved, documentation/benchmark ranges and known metadata addresses.
 * - Loopback: test environment, or live with `allowPrivate`.
 * - Private (RFC 1918, CGNAT, unique-local, 192.0.0.0/24): only with `allowPrivate`.
 * - IPv6 forms embedding an IPv4 address (mapped, compatible, SIIT, NAT64,
 *   6to4, Teredo) are judged by the embedded IPv4 address.
 *
 * Checked at registration (`checkWebhookUrl` + `resolveProblem`) and at every
 * delivery on the resolution actually used to connect (`guardedLookup`), so a
 * name that rebinds to a forbidden address between the two is still refused.
 * IPv4 in decimal, octal, hex or shortened forms needs no code here: the WHATWG
 * URL parser normalises such hosts to dotted quads (`0x7f000001` → `127.0.0.1`).
 */
import dns from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import net from 'node:net';

/** The environment of the account owning the endpoint (API key `sk_test_` / `sk_live_`). */
export type WebhookEnvironment = 'test' | 'live';

/** What a URL may point at: the environment, and the operator's AUTHZ_WEBHOOK_ALLOW_PRIVATE switch. */
export interface UrlRules {
  environment: WebhookEnvironment;
  allowPrivate: boolean;
}

/** Longest accepted URL, in characters. */
const MAX_URL_LENGTH = 2048;

/** Error code of a delivery lookup that resolved to a forbidden address. */
const FORBIDDEN_CODE = 'WEBHOOK_ADDRESS_FORBIDDEN';

/**
 * Syntax and literal-address checks: scheme (live: https only; test: http or
 * https), no userinfo (user:pass@), a host, port 1..65535 if given, length <=
 * 2048, no fragment. When the host is an IP literal it is checked with
 * addressProblem. Returns the parsed URL or a human-readable reason.
 */
export function checkWebhookUrl(raw: string, rules: UrlRules): { ok: true; url: URL } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason });
  if (typeof raw !== 'string' || raw.length === 0) return fail('URL is empty');
  if (raw.length > MAX_URL_LENGTH) return fail(`URL is longer than ${MAX_URL_LENGTH} characters`);
  // The URL parser silently drops tabs and newlines and trims spaces and controls: refuse them instead.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return fail('URL contains whitespace or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail('not an absolute URL');
  }
  if (rules.environment === 'live') {
    if (url.protocol !== 'https:') return fail('live webhook URLs must use https');
  } else if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return fail('webhook URLs must use http or https');
  }
  if (url.username !== '' || url.password !== '')
    return fail('credentials (user:pass@) are not allowed in webhook URLs');
  if (url.hostname === '') return fail('URL has no host');
  if (url.port !== '') {
    const port = Number(url.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return fail(`port ${url.port} is out of range (1..65535)`);
  }
  // An empty fragment (`…#`) leaves url.hash empty; `#` can only start a fragment in a parsed URL.
  if (raw.includes('#')) return fail('fragments (#…) are not allowed in webhook URLs');
  if (isIpLiteral(url.hostname)) {
    const problem = addressProblem(url.hostname, rules);
    if (problem) return fail(problem);
  }
  return { ok: true, url };
}

/**
 * Why an address (IPv4 or IPv6 text, as from DNS or URL.hostname, with or
 * without [ ]) may not be called, or null when it may.
 */
export function addressProblem(address: string, rules: UrlRules): string | null {
  const shown = address;
  const verdict = classify(address);
  switch (verdict.kind) {
    case 'public':
      return null;
    case 'invalid':
      return `${shown} is not an IP address`;
    case 'forbidden':
      return `${shown} is ${verdict.what}`;
    case 'loopback':
      if (rules.environment === 'test' || rules.allowPrivate) return null;
      return `${shown} is ${verdict.what} (allowed in live mode only when the operator sets AUTHZ_WEBHOOK_ALLOW_PRIVATE=1)`;
    case 'private':
      if (rules.allowPrivate) return null;
      return `${shown} is ${verdict.what} (allowed only when the operator sets AUTHZ_WEBHOOK_ALLOW_PRIVATE=1)`;
  }
}

/**
 * Resolves a hostname (all addresses) with `lookup` (default
 * node:dns/promises lookup with {all:true}) and returns the reason of the first
 * forbidden one, or null; an IP literal is checked directly; resolution failure
 * is a reason ("does not resolve"). Used at registration.
 */
export async function resolveProblem(
  hostname: string,
  rules: UrlRules,
  lookup: (host: string) => Promise<Array<{ address: string; family: number }>> = (host) =>
    dnsLookupAll(host, { all: true }),
): Promise<string | null> {
  if (isIpLiteral(hostname)) return addressProblem(hostname, rules);
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await lookup(hostname);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException | null)?.code;
    return `host ${hostname} does not resolve${code ? ` (${code})` : ''}`;
  }
  if (!Array.isArray(addresses) || addresses.length === 0) return `host ${hostname} does not resolve (no addresses)`;
  for (const { address } of addresses) {
    const problem = addressProblem(address, rules);
    if (problem) return `host ${hostname} resolves to ${problem}`;
  }
  return null;
}

/**
 * A `lookup` function with the signature of node's dns.lookup (hostname,
 * options, callback) for undici's/node's socket `connect` options: resolves,
 * and fails with an Error (code 'WEBHOOK_ADDRESS_FORBIDDEN') when any returned
 * address is forbidden, so delivery connects only to the address it checked
 * (no DNS rebinding window). Honours options.all (array) and not-all (first
 * address) forms.
 */
export function guardedLookup(
  rules: UrlRules,
  lookup: typeof import('node:dns').lookup = dns.lookup,
): import('node:net').LookupFunction {
  return (hostname, options, callback) => {
    // Older callers pass a bare address family instead of an options object.
    const opts: dns.LookupOptions = typeof options === 'number' ? { family: options } : { ...(options ?? {}) };
    const wantAll = opts.all === true;
    lookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) {
        callback(err, wantAll ? [] : '', 0);
        return;
      }
      const list = Array.isArray(addresses) ? addresses : [];
      if (list.length === 0) {
        const e: NodeJS.ErrnoException = Object.assign(new Error(`host ${hostname} does not resolve`), {
          code: 'ENOTFOUND',
          hostname,
        });
        callback(e, wantAll ? [] : '', 0);
        return;
      }
      for (const { address } of list) {
        const problem = addressProblem(address, rules);
        if (problem) {
          const e: NodeJS.ErrnoException = Object.assign(new Error(`host ${hostname} resolves to ${problem}`), {
            code: FORBIDDEN_CODE,
            hostname,
            address,
          });
          callback(e, wantAll ? [] : '', 0);
          return;
        }
      }
      if (wantAll) callback(null, list);
      else callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

// ---------------------------------------------------------------------------
// Classification

type Verdict = { kind: 'public' } | { kind: 'invalid' } | { kind: 'loopback' | 'private' | 'forbidden'; what: string };

type Rule = { kind: 'loopback' | 'private' | 'forbidden'; what: string };

/** True when `host` (URL.hostname form, IPv6 possibly bracketed) is an IP address rather than a name. */
function isIpLiteral(host: string): boolean {
  return net.isIP(stripBrackets(host)) !== 0;
}

function stripBrackets(text: string): string {
  return text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
}

function classify(address: string): Verdict {
  let text = stripBrackets(address.trim());
  const zone = text.indexOf('%');
  if (zone !== -1 && text.includes(':')) text = text.slice(0, zone); // fe80::1%eth0
  if (net.isIPv4(text)) return classifyV4(parseV4(text));
  if (net.isIPv6(text)) return classifyV6(parseV6(text));
  // Non-canonical IPv4 (`0x7f000001`, `0177.1`, `2130706433`): normalise as a URL host would be.
  if (/^[0-9a-fA-FxX.]+$/.test(text)) {
    try {
      const host = new URL(`http://${text}/`).hostname;
      if (net.isIPv4(host)) return classifyV4(parseV4(host));
    } catch {
      // not an address
    }
  }
  return { kind: 'invalid' };
}

// IPv4 -----------------------------------------------------------------------

type V4Range = { base: number; bits: number; rule: Rule };

function parseV4(text: string): number {
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function formatV4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function v4(cidr: string, kind: Rule['kind'], what: string): V4Range {
  const [base, bits] = cidr.split('/') as [string, string];
  return { base: parseV4(base), bits: Number(bits), rule: { kind, what } };
}

/** First match wins: exact metadata addresses come before the ranges holding them. */
const V4_RANGES: V4Range[] = [
  v4('100.100.100.200/32', 'forbidden', 'a cloud metadata address'),
  v4('192.0.0.192/32', 'forbidden', 'a cloud metadata address'),
  v4('0.0.0.0/8', 'forbidden', 'an unspecified ("this network") address'),
  v4('169.254.0.0/16', 'forbidden', 'a link-local address (includes cloud metadata)'),
  v4('224.0.0.0/4', 'forbidden', 'a multicast address'),
  v4('255.255.255.255/32', 'forbidden', 'the broadcast address'),
  v4('240.0.0.0/4', 'forbidden', 'a reserved address'),
  v4('192.0.2.0/24', 'forbidden', 'a documentation address'),
  v4('198.51.100.0/24', 'forbidden', 'a documentation address'),
  v4('203.0.113.0/24', 'forbidden', 'a documentation address'),
  v4('198.18.0.0/15', 'forbidden', 'a benchmarking address'),
  v4('192.88.99.0/24', 'forbidden', 'a reserved (6to4 relay) address'),
  v4('127.0.0.0/8', 'loopback', 'a loopback address'),
  v4('10.0.0.0/8', 'private', 'a private address'),
  v4('172.16.0.0/12', 'private', 'a private address'),
  v4('192.168.0.0/16', 'private', 'a private address'),
  v4('100.64.0.0/10', 'private', 'a shared (carrier-grade NAT) address'),
  v4('192.0.0.0/24', 'private', 'an IETF protocol assignment address'),
];

function classifyV4(n: number): Verdict {
  for (const { base, bits, rule } of V4_RANGES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === (base & mask) >>> 0) return rule;
  }
  return { kind: 'public' };
}

// IPv6 -----------------------------------------------------------------------

/** 128-bit value of a valid IPv6 text (net.isIPv6 already checked), including a trailing dotted quad. */
function parseV6(text: string): bigint {
  let s = text.toLowerCase();
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const n = parseV4(tail);
    s = `${s.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...restGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

type V6Range = { base: bigint; bits: number };

function v6(cidr: string): V6Range {
  const [base, bits] = cidr.split('/') as [string, string];
  return { base: parseV6(base), bits: Number(bits) };
}

function inV6(n: bigint, { base, bits }: V6Range): boolean {
  const shift = BigInt(128 - bits);
  return n >> shift === base >> shift;
}

const ALL_ONES_32 = 0xffffffffn;

/** IPv6 ranges that carry an IPv4 address, and where it sits. */
const V6_EMBEDDING: Array<{ range: V6Range; name: string; v4: (n: bigint) => number }> = [
  { range: v6('::ffff:0:0/96'), name: 'an IPv4-mapped address', v4: (n) => Number(n & ALL_ONES_32) },
  { range: v6('::ffff:0:0:0/96'), name: 'an IPv4-translated address', v4: (n) => Number(n & ALL_ONES_32) },
  { range: v6('::/96'), name: 'an IPv4-compatible address', v4: (n) => Number(n & ALL_ONES_32) },
  { range: v6('64:ff9b::/96'), name: 'a NAT64 address', v4: (n) => Number(n & ALL_ONES_32) },
  { range: v6('2002::/16'), name: 'a 6to4 address', v4: (n) => Number((n >> 80n) & ALL_ONES_32) },
  // Teredo: the client's IPv4 address is stored inverted in the low 32 bits.
  { range: v6('2001::/32'), name: 'a Teredo address', v4: (n) => Number(~n & ALL_ONES_32) },
];

/** First match wins. */
const V6_RANGES: Array<{ range: V6Range; rule: Rule }> = [
  { range: v6('fd00:ec2::254/128'), rule: { kind: 'forbidden', what: 'a cloud metadata address' } },
  { range: v6('fe80::/10'), rule: { kind: 'forbidden', what: 'a link-local address' } },
  { range: v6('ff00::/8'), rule: { kind: 'forbidden', what: 'a multicast address' } },
  { range: v6('2001:db8::/32'), rule: { kind: 'forbidden', what: 'a documentation address' } },
  { range: v6('3fff::/20'), rule: { kind: 'forbidden', what: 'a documentation address' } },
  { range: v6('2001:2::/48'), rule: { kind: 'forbidden', what: 'a benchmarking address' } },
  { range: v6('2001:10::/28'), rule: { kind: 'forbidden', what: 'a reserved (ORCHID) address' } },
  { range: v6('2001:20::/28'), rule: { kind: 'forbidden', what: 'a reserved (ORCHIDv2) address' } },
  { range: v6('100::/64'), rule: { kind: 'forbidden', what: 'a discard-only address' } },
  { range: v6('64:ff9b:1::/48'), rule: { kind: 'private', what: 'a local-use NAT64 address' } },
  { range: v6('fc00::/7'), rule: { kind: 'private', what: 'a unique-local address' } },
  { range: v6('fec0::/10'), rule: { kind: 'private', what: 'a site-local address' } },
];

const GLOBAL_UNICAST = v6('2000::/3');

function classifyV6(n: bigint): Verdict {
  if (n === 0n) return { kind: 'forbidden', what: 'the unspecified address' };
  if (n === 1n) return { kind: 'loopback', what: 'a loopback address' };
  for (const { range, name, v4: extract } of V6_EMBEDDING) {
    if (!inV6(n, range)) continue;
    const inner = extract(n);
    const verdict = classifyV4(inner);
    if (verdict.kind === 'public') return verdict;
    if (verdict.kind === 'invalid') return verdict;
    return { kind: verdict.kind, what: `${name} embedding ${formatV4(inner)}, ${verdict.what}` };
  }
  for (const { range, rule } of V6_RANGES) if (inV6(n, range)) return rule;
  if (!inV6(n, GLOBAL_UNICAST)) return { kind: 'forbidden', what: 'a reserved (not global unicast) address' };
  return { kind: 'public' };
}
