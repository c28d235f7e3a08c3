/**
 * Webhook URL policy (SSRF): the URL table for live / test / allowPrivate,
 * IPv4 forms normalised by the URL parser (decimal, octal, hex, shortened),
 * IPv6 forms embedding IPv4 (mapped, compatible, NAT64, 6to4, Teredo),
 * registration-time resolution with an injected lookup, and the delivery-time
 * guarded lookup (DNS rebinding) with injected and real (localhost) resolvers.
 * No name other than `localhost` is resolved for real.
 */
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  addressProblem,
  checkWebhookUrl,
  guardedLookup,
  resolveProblem,
  type UrlRules,
} from '../../../runtime/webhooks/url-policy.js';

const LIVE: UrlRules = { environment: 'live', allowPrivate: false };
const TEST: UrlRules = { environment: 'test', allowPrivate: false };
const LIVE_PRIVATE: UrlRules = { environment: 'live', allowPrivate: true };
const TEST_PRIVATE: UrlRules = { environment: 'test', allowPrivate: true };

const Y = true;
const N = false;

/** [url, allowed in live, allowed in test, allowed in live with allowPrivate, what it is]. */
type Row = [url: string, live: boolean, test: boolean, livePrivate: boolean, note: string];

const SYNTAX: Row[] = [
  ['https://example.com/hook', Y, Y, Y, 'public hostname (no resolution in checkWebhookUrl)'],
  ['https://example.com:8443/hook?x=1', Y, Y, Y, 'port and query'],
  ['https://example.com:65535/', Y, Y, Y, 'highest port'],
  ['http://example.com/hook', N, Y, N, 'http: live is https only, even with allowPrivate'],
  ['https://user:pass@example.com/hook', N, N, N, 'userinfo user:pass@'],
  ['https://user@example.com/hook', N, N, N, 'userinfo user@'],
  ['ftp://example.com/hook', N, N, N, 'ftp scheme'],
  ['javascript:alert(1)', N, N, N, 'javascript scheme'],
  ['file:///etc/passwd', N, N, N, 'file scheme'],
  ['/hook', N, N, N, 'relative URL'],
  ['example.com/hook', N, N, N, 'no scheme'],
  ['', N, N, N, 'empty'],
  ['https://', N, N, N, 'no host'],
  [`https://example.com/${'a'.repeat(2100)}`, N, N, N, 'over-long (> 2048)'],
  ['https://example.com/hook#frag', N, N, N, 'fragment'],
  ['https://example.com/hook#', N, N, N, 'empty fragment'],
  ['https://example.com:0/', N, N, N, 'port 0'],
  ['https://example.com:65536/', N, N, N, 'port above 65535'],
  [' https://example.com/hook', N, N, N, 'leading space'],
  ['https://exa\tmple.com/hook', N, N, N, 'tab inside the host (the parser would drop it)'],
  ['https://example.com/ho\nok', N, N, N, 'newline'],
];

const LITERALS: Row[] = [
  // loopback: test environment, or allowPrivate
  ['https://127.0.0.1/', N, Y, Y, 'loopback'],
  ['https://127.0.0.1:8080/hook', N, Y, Y, 'loopback with port'],
  ['https://127.1/', N, Y, Y, 'loopback, shortened'],
  ['https://2130706433/', N, Y, Y, 'loopback, decimal'],
  ['https://0x7f000001/', N, Y, Y, 'loopback, hex'],
  ['https://0x7f.0.0.1/', N, Y, Y, 'loopback, hex part'],
  ['https://0177.0.0.1/', N, Y, Y, 'loopback, octal part'],
  ['https://017700000001/', N, Y, Y, 'loopback, octal'],
  ['https://127.0.0.1./', N, Y, Y, 'loopback, trailing dot'],
  ['https://127.255.255.254/', N, Y, Y, 'loopback /8'],
  ['https://[::1]/', N, Y, Y, 'IPv6 loopback'],
  ['https://[0:0:0:0:0:0:0:1]/', N, Y, Y, 'IPv6 loopback, uncompressed'],
  ['https://[::ffff:127.0.0.1]/', N, Y, Y, 'IPv4-mapped loopback, dotted'],
  ['https://[::ffff:7f00:1]/', N, Y, Y, 'IPv4-mapped loopback, hex'],
  ['https://[::127.0.0.1]/', N, Y, Y, 'IPv4-compatible loopback'],
  ['https://[64:ff9b::7f00:1]/', N, Y, Y, 'NAT64 embedding loopback'],
  ['https://[2002:7f00:1::]/', N, Y, Y, '6to4 embedding loopback'],
  // private: only with allowPrivate
  ['https://10.0.0.1/', N, N, Y, 'RFC 1918 10/8'],
  ['https://0x0a000001/', N, N, Y, 'RFC 1918 10/8, hex'],
  ['https://172.16.5.4/', N, N, Y, 'RFC 1918 172.16/12'],
  ['https://172.31.255.255/', N, N, Y, 'RFC 1918 172.16/12, top'],
  ['https://192.168.1.1/', N, N, Y, 'RFC 1918 192.168/16'],
  ['https://100.64.1.1/', N, N, Y, 'CGNAT 100.64/10'],
  ['https://192.0.0.8/', N, N, Y, 'IETF 192.0.0.0/24'],
  ['https://[fd12:3456::1]/', N, N, Y, 'unique-local fd00::/8'],
  ['https://[fc00::1]/', N, N, Y, 'unique-local fc00::/8'],
  ['https://[::ffff:10.0.0.1]/', N, N, Y, 'IPv4-mapped private'],
  ['https://[::ffff:c0a8:101]/', N, N, Y, 'IPv4-mapped private, hex'],
  ['https://[64:ff9b::a00:1]/', N, N, Y, 'NAT64 embedding private'],
  // always forbidden
  ['https://169.254.169.254/', N, N, N, 'cloud metadata (link-local)'],
  ['https://169.254.169.254/latest/meta-data/', N, N, N, 'cloud metadata path'],
  ['https://0xa9fea9fe/', N, N, N, 'cloud metadata, hex'],
  ['https://2852039166/', N, N, N, 'cloud metadata, decimal'],
  ['https://[::ffff:169.254.169.254]/', N, N, N, 'cloud metadata, IPv4-mapped'],
  ['https://[fd00:ec2::254]/', N, N, N, 'AWS IPv6 metadata'],
  ['https://100.100.100.200/', N, N, N, 'Alibaba metadata'],
  ['https://192.0.0.192/', N, N, N, 'Oracle metadata'],
  ['https://169.254.1.1/', N, N, N, 'link-local'],
  ['https://[fe80::1]/', N, N, N, 'IPv6 link-local'],
  ['https://[febf::1]/', N, N, N, 'IPv6 link-local, top of fe80::/10'],
  ['https://224.0.0.1/', N, N, N, 'multicast'],
  ['https://239.255.255.250/', N, N, N, 'multicast (SSDP)'],
  ['https://[ff02::1]/', N, N, N, 'IPv6 multicast'],
  ['https://255.255.255.255/', N, N, N, 'broadcast'],
  ['https://240.0.0.1/', N, N, N, 'reserved 240/4'],
  ['https://0.0.0.0/', N, N, N, 'unspecified'],
  ['https://0/', N, N, N, 'unspecified, decimal'],
  ['https://0.1.2.3/', N, N, N, '0.0.0.0/8'],
  ['https://[::]/', N, N, N, 'IPv6 unspecified'],
  ['https://[::ffff:0.0.0.0]/', N, N, N, 'IPv4-mapped unspecified'],
  ['https://[::2]/', N, N, N, 'IPv4-compatible 0.0.0.2'],
  ['https://192.0.2.1/', N, N, N, 'documentation TEST-NET-1'],
  ['https://198.51.100.1/', N, N, N, 'documentation TEST-NET-2'],
  ['https://203.0.113.1/', N, N, N, 'documentation TEST-NET-3'],
  ['https://198.18.0.1/', N, N, N, 'benchmarking 198.18/15'],
  ['https://198.19.255.255/', N, N, N, 'benchmarking 198.18/15, top'],
  ['https://[2001:db8::1]/', N, N, N, 'IPv6 documentation'],
  ['https://[100::1]/', N, N, N, 'IPv6 discard-only'],
  ['https://[4000::1]/', N, N, N, 'IPv6 outside global unicast'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', N, N, N, 'Teredo embedding 192.0.2.45'],
  ['https://[2002:a9fe:a9fe::1]/', N, N, N, '6to4 embedding metadata'],
  ['https://[64:ff9b::a9fe:a9fe]/', N, N, N, 'NAT64 embedding metadata'],
  // public
  ['https://8.8.8.8/', Y, Y, Y, 'public IPv4'],
  ['https://1.1.1.1:443/hook', Y, Y, Y, 'public IPv4 with port'],
  ['https://172.32.0.1/', Y, Y, Y, 'just above 172.16/12'],
  ['https://172.15.255.255/', Y, Y, Y, 'just below 172.16/12'],
  ['https://100.128.0.1/', Y, Y, Y, 'just above 100.64/10'],
  ['https://11.0.0.1/', Y, Y, Y, 'just above 10/8'],
  ['https://[2606:4700::1111]/', Y, Y, Y, 'public IPv6'],
  ['https://[2a00:1450:4001:81c::200e]/', Y, Y, Y, 'public IPv6'],
  ['https://[::ffff:8.8.8.8]/', Y, Y, Y, 'IPv4-mapped public'],
  ['https://[64:ff9b::808:808]/', Y, Y, Y, 'NAT64 embedding public'],
  ['https://[2002:808:808::1]/', Y, Y, Y, '6to4 embedding public'],
];

function allowed(url: string, rules: UrlRules): boolean {
  return checkWebhookUrl(url, rules).ok;
}

describe('checkWebhookUrl: the SSRF table', () => {
  it.each([...SYNTAX, ...LITERALS])('%j (live %s, test %s, allowPrivate %s: %s)', (url, live, test, livePrivate) => {
    expect(allowed(url, LIVE), 'live').toBe(live);
    expect(allowed(url, TEST), 'test').toBe(test);
    expect(allowed(url, LIVE_PRIVATE), 'live + allowPrivate').toBe(livePrivate);
    // In the test environment allowPrivate adds private addresses; the scheme rule is http or https.
    const testPrivate = test || (livePrivate && !url.startsWith('http://')) || (url.startsWith('http://') && test);
    expect(allowed(url, TEST_PRIVATE), 'test + allowPrivate').toBe(testPrivate);
  });

  it('http with an IP literal: live refuses the scheme, test judges the address', () => {
    expect(allowed('http://127.0.0.1:3000/hook', LIVE)).toBe(false);
    expect(allowed('http://127.0.0.1:3000/hook', LIVE_PRIVATE)).toBe(false);
    expect(allowed('http://127.0.0.1:3000/hook', TEST)).toBe(true);
    expect(allowed('http://[::1]:3000/hook', TEST)).toBe(true);
    expect(allowed('http://10.0.0.1/hook', TEST)).toBe(false);
    expect(allowed('http://10.0.0.1/hook', TEST_PRIVATE)).toBe(true);
    expect(allowed('http://169.254.169.254/', TEST_PRIVATE)).toBe(false);
  });

  it('returns the parsed URL, and human-readable reasons', () => {
    const ok = checkWebhookUrl('https://Example.COM:443/a/../hook?x=1', LIVE);
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(ok.url.href).toBe('https://example.com/hook?x=1');

    const reason = (url: string, rules: UrlRules = LIVE) => {
      const r = checkWebhookUrl(url, rules);
      return r.ok ? null : r.reason;
    };
    expect(reason('http://example.com/')).toMatch(/https/);
    expect(reason('ftp://example.com/', TEST)).toMatch(/http or https/);
    expect(reason('https://u:p@example.com/')).toMatch(/credentials/);
    expect(reason('')).toMatch(/empty/);
    expect(reason('/hook')).toMatch(/absolute URL/);
    expect(reason(`https://example.com/${'a'.repeat(2048)}`)).toMatch(/2048/);
    expect(reason('https://example.com/#x')).toMatch(/fragment/);
    expect(reason('https://example.com:0/')).toMatch(/port/);
    expect(reason('https://0x7f000001/')).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(reason('https://10.1.2.3/')).toMatch(/10\.1\.2\.3 is a private address.*AUTHZ_WEBHOOK_ALLOW_PRIVATE/);
    expect(reason('https://169.254.169.254/', LIVE_PRIVATE)).toMatch(/link-local/);
    expect(reason('https://[::ffff:7f00:1]/')).toMatch(
      /IPv4-mapped address embedding 127\.0\.0\.1, a loopback address/,
    );
    expect(reason('https://[fd00:ec2::254]/', LIVE_PRIVATE)).toMatch(/metadata/);
  });

  it('the length limit is 2048 characters inclusive', () => {
    const base = 'https://example.com/';
    expect(allowed(base + 'a'.repeat(2048 - base.length), LIVE)).toBe(true);
    expect(allowed(base + 'a'.repeat(2049 - base.length), LIVE)).toBe(false);
  });
});

describe('the URL parser normalises IPv4 forms (decimal, octal, hex) before the address check', () => {
  it.each([
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://2130706433/', '127.0.0.1'],
    ['http://017700000001/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://127.0.0.1./', '127.0.0.1'],
    ['http://0xa9fea9fe/', '169.254.169.254'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['http://[::127.0.0.1]/', '[::7f00:1]'],
    ['http://[0:0:0:0:0:0:0:1]/', '[::1]'],
  ])('%s has hostname %s', (url, hostname) => {
    expect(new URL(url).hostname).toBe(hostname);
  });
});

describe('addressProblem', () => {
  it('takes DNS-style text, bracketed or not, in any case, with an IPv6 zone', () => {
    expect(addressProblem('127.0.0.1', LIVE)).toMatch(/loopback/);
    expect(addressProblem('127.0.0.1', TEST)).toBeNull();
    expect(addressProblem('::1', LIVE)).toMatch(/loopback/);
    expect(addressProblem('[::1]', LIVE)).toMatch(/loopback/);
    expect(addressProblem('::1', TEST)).toBeNull();
    expect(addressProblem('::ffff:7f00:1', LIVE)).toMatch(/embedding 127\.0\.0\.1/);
    expect(addressProblem('::FFFF:127.0.0.1', LIVE)).toMatch(/embedding 127\.0\.0\.1/);
    expect(addressProblem('FD00:EC2::254', LIVE_PRIVATE)).toMatch(/metadata/);
    expect(addressProblem('fd00:ec2:0:0:0:0:0:254', LIVE_PRIVATE)).toMatch(/metadata/);
    expect(addressProblem('fd00:ec2::253', LIVE_PRIVATE)).toBeNull();
    expect(addressProblem('fe80::1%eth0', TEST_PRIVATE)).toMatch(/link-local/);
    expect(addressProblem('8.8.8.8', LIVE)).toBeNull();
    expect(addressProblem('2606:4700::1111', LIVE)).toBeNull();
  });

  it('normalises non-canonical IPv4 text like the URL parser', () => {
    expect(addressProblem('0x7f000001', LIVE)).toMatch(/loopback/);
    expect(addressProblem('2130706433', LIVE)).toMatch(/loopback/);
    expect(addressProblem('0177.0.0.1', LIVE)).toMatch(/loopback/);
    expect(addressProblem('127.1', LIVE)).toMatch(/loopback/);
  });

  it('refuses what is not an address', () => {
    expect(addressProblem('example.com', TEST_PRIVATE)).toMatch(/not an IP address/);
    expect(addressProblem('', TEST_PRIVATE)).toMatch(/not an IP address/);
    expect(addressProblem('1.2.3.4.5', TEST_PRIVATE)).toMatch(/not an IP address/);
    expect(addressProblem('evil.com@8.8.8.8', TEST_PRIVATE)).toMatch(/not an IP address/);
  });

  it('the cloud metadata, link-local, multicast and unspecified addresses stay forbidden with allowPrivate in both environments', () => {
    for (const a of [
      '169.254.169.254',
      '100.100.100.200',
      'fd00:ec2::254',
      'fe80::1',
      '224.0.0.1',
      'ff02::1',
      '0.0.0.0',
      '::',
      '255.255.255.255',
      '240.0.0.1',
    ]) {
      expect(addressProblem(a, TEST_PRIVATE), a).not.toBeNull();
      expect(addressProblem(a, LIVE_PRIVATE), a).not.toBeNull();
    }
  });
});

type Resolved = Array<{ address: string; family: number }>;
const family = (address: string) => (address.includes(':') ? 6 : 4);
const answers = (...addresses: string[]): Resolved =>
  addresses.map((address) => ({ address, family: family(address) }));

describe('resolveProblem (registration) with an injected lookup', () => {
  const fake = (table: Record<string, Resolved>) => {
    const asked: string[] = [];
    const lookup = async (host: string): Promise<Resolved> => {
      asked.push(host);
      const found = table[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return found;
    };
    return { lookup, asked };
  };
  const { lookup, asked } = fake({
    'public.test': answers('93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'),
    'mixed.test': answers('93.184.216.34', '10.0.0.7'),
    'metadata.test': answers('169.254.169.254'),
    'localhost.test': answers('127.0.0.1', '::1'),
    'mapped.test': answers('::ffff:7f00:1'),
    'empty.test': [],
  });

  it('a name resolving to public addresses only is fine', async () => {
    expect(await resolveProblem('public.test', LIVE, lookup)).toBeNull();
  });

  it('any forbidden address among the answers refuses the name', async () => {
    const reason = await resolveProblem('mixed.test', LIVE, lookup);
    expect(reason).toMatch(/mixed\.test resolves to 10\.0\.0\.7 is a private address/);
    expect(await resolveProblem('mixed.test', TEST, lookup)).not.toBeNull();
    expect(await resolveProblem('mixed.test', LIVE_PRIVATE, lookup)).toBeNull();
  });

  it('applies the environment rules to the answers', async () => {
    expect(await resolveProblem('localhost.test', LIVE, lookup)).toMatch(/loopback/);
    expect(await resolveProblem('localhost.test', TEST, lookup)).toBeNull();
    expect(await resolveProblem('mapped.test', LIVE, lookup)).toMatch(/127\.0\.0\.1/);
    expect(await resolveProblem('metadata.test', TEST_PRIVATE, lookup)).toMatch(/link-local/);
  });

  it('a name that does not resolve is a reason', async () => {
    expect(await resolveProblem('nowhere.test', TEST_PRIVATE, lookup)).toMatch(
      /nowhere\.test does not resolve \(ENOTFOUND\)/,
    );
    expect(await resolveProblem('empty.test', TEST_PRIVATE, lookup)).toMatch(/does not resolve/);
  });

  it('an IP literal is checked directly, without a lookup', async () => {
    const before = asked.length;
    expect(await resolveProblem('[::1]', LIVE, lookup)).toMatch(/loopback/);
    expect(await resolveProblem('127.0.0.1', TEST, lookup)).toBeNull();
    expect(await resolveProblem('8.8.8.8', LIVE, lookup)).toBeNull();
    expect(await resolveProblem('[fe80::1]', TEST_PRIVATE, lookup)).toMatch(/link-local/);
    expect(asked.length).toBe(before);
  });

  it('the default lookup resolves localhost to loopback (no internet name is resolved)', async () => {
    expect(await resolveProblem('localhost', TEST)).toBeNull();
    expect(await resolveProblem('localhost', LIVE)).toMatch(/localhost resolves to .* loopback/);
  });
});

/** A fake of node's dns.lookup answering from a function of the host; records the options it got. */
function fakeDnsLookup(answer: (host: string) => Resolved | Error) {
  const calls: Array<{ host: string; options: dns.LookupOptions }> = [];
  const impl = (
    host: string,
    options: dns.LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
  ) => {
    calls.push({ host, options });
    const a = answer(host);
    // Asynchronous, as the real one.
    setImmediate(() => (a instanceof Error ? callback(a, []) : callback(null, a)));
  };
  return { lookup: impl as unknown as typeof dns.lookup, calls };
}

type LookupOutcome = { err: NodeJS.ErrnoException | null; address: string | dns.LookupAddress[]; family?: number };

function callLookup(fn: LookupFunction, host: string, options: dns.LookupOptions): Promise<LookupOutcome> {
  return new Promise((resolve) => fn(host, options, (err, address, family) => resolve({ err, address, family })));
}

describe('guardedLookup (delivery) with an injected dns lookup', () => {
  const { lookup, calls } = fakeDnsLookup((host) => {
    if (host === 'public.test') return answers('93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946');
    if (host === 'private.test') return answers('10.0.0.7');
    if (host === 'mixed.test') return answers('93.184.216.34', '169.254.169.254');
    if (host === 'loopback.test') return answers('127.0.0.1');
    return Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  });

  it('passes public addresses through in the all form', async () => {
    const r = await callLookup(guardedLookup(LIVE, lookup), 'public.test', { all: true });
    expect(r.err).toBeNull();
    expect(r.address).toEqual(answers('93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'));
  });

  it('passes the first address through in the single form, and asks for all addresses', async () => {
    const r = await callLookup(guardedLookup(LIVE, lookup), 'public.test', { family: 0 });
    expect(r).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    const last = calls.at(-1)!;
    expect(last.host).toBe('public.test');
    expect(last.options).toMatchObject({ all: true, family: 0 });
  });

  it('fails with WEBHOOK_ADDRESS_FORBIDDEN for a forbidden address, in both forms', async () => {
    for (const options of [{ all: true }, {}] as dns.LookupOptions[]) {
      const r = await callLookup(guardedLookup(LIVE, lookup), 'private.test', options);
      expect(r.err?.code).toBe('WEBHOOK_ADDRESS_FORBIDDEN');
      expect(r.err?.message).toMatch(/private\.test resolves to 10\.0\.0\.7 is a private address/);
    }
    expect((await callLookup(guardedLookup(LIVE_PRIVATE, lookup), 'private.test', {})).err).toBeNull();
  });

  it('any forbidden answer fails the lookup, even with allowPrivate', async () => {
    const r = await callLookup(guardedLookup(TEST_PRIVATE, lookup), 'mixed.test', {});
    expect(r.err?.code).toBe('WEBHOOK_ADDRESS_FORBIDDEN');
    expect(r.err?.message).toMatch(/169\.254\.169\.254/);
  });

  it('loopback follows the environment', async () => {
    expect((await callLookup(guardedLookup(TEST, lookup), 'loopback.test', {})).address).toBe('127.0.0.1');
    expect((await callLookup(guardedLookup(LIVE, lookup), 'loopback.test', {})).err?.code).toBe(
      'WEBHOOK_ADDRESS_FORBIDDEN',
    );
  });

  it('a resolution error is passed on as is', async () => {
    const r = await callLookup(guardedLookup(TEST, lookup), 'nowhere.test', { all: true });
    expect(r.err?.code).toBe('ENOTFOUND');
  });

  it('DNS rebinding: the same name resolving public at registration, then private at delivery, fails at delivery', async () => {
    let n = 0;
    const rebinding = (): Resolved => (n++ === 0 ? answers('93.184.216.34') : answers('127.0.0.1'));
    // Registration (resolveProblem) sees the public address.
    expect(await resolveProblem('rebind.test', LIVE, async () => rebinding())).toBeNull();
    // Delivery resolves again, through the guard, and is refused.
    const { lookup: rebound } = fakeDnsLookup(() => rebinding());
    const r = await callLookup(guardedLookup(LIVE, rebound), 'rebind.test', { all: true });
    expect(r.err?.code).toBe('WEBHOOK_ADDRESS_FORBIDDEN');
    expect(n).toBe(2);

    // And between two deliveries through the same guard.
    let m = 0;
    const { lookup: flipping } = fakeDnsLookup(() => (m++ === 0 ? answers('8.8.8.8') : answers('169.254.169.254')));
    const guard = guardedLookup(LIVE, flipping);
    expect((await callLookup(guard, 'flip.test', {})).address).toBe('8.8.8.8');
    expect((await callLookup(guard, 'flip.test', {})).err?.code).toBe('WEBHOOK_ADDRESS_FORBIDDEN');
  });
});

describe('guardedLookup with the real dns.lookup (localhost only)', () => {
  it('localhost succeeds in the test environment, in both forms', async () => {
    const all = await callLookup(guardedLookup(TEST), 'localhost', { all: true });
    expect(all.err).toBeNull();
    expect(Array.isArray(all.address) && all.address.length).toBeGreaterThan(0);
    const one = await callLookup(guardedLookup(TEST), 'localhost', {});
    expect(one.err).toBeNull();
    expect(['127.0.0.1', '::1']).toContain(one.address);
  });

  it('localhost fails in live without allowPrivate, and succeeds with it', async () => {
    const r = await callLookup(guardedLookup(LIVE), 'localhost', {});
    expect(r.err?.code).toBe('WEBHOOK_ADDRESS_FORBIDDEN');
    expect((await callLookup(guardedLookup(LIVE_PRIVATE), 'localhost', {})).err).toBeNull();
  });

  it('an HTTP request through the guard reaches a 127.0.0.1 server in test, and is refused before connecting in live', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const request = (rules: UrlRules) =>
      new Promise<{ status?: number; code?: string }>((resolve) => {
        const req = http.request(
          {
            host: 'localhost',
            port,
            path: '/hook',
            method: 'POST',
            family: 4,
            agent: false,
            lookup: guardedLookup(rules),
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === undefined ? {} : { status: res.statusCode }));
          },
        );
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === undefined ? {} : { code: e.code }));
        req.end('{}');
      });
    try {
      expect(await request(TEST)).toEqual({ status: 200 });
      expect(hits).toBe(1);
      expect(await request(LIVE)).toEqual({ code: 'WEBHOOK_ADDRESS_FORBIDDEN' });
      expect(hits).toBe(1);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
