/**
 * Declared mappings (COAZ-MCP binding, draft 1) as the proxy reads them: the
 * AuthZEN action rule in the server's namespace, `$` expressions in CEL
 * (@bufbuild/cel) over `params` and `token`, the namespace check and its
 * extra actions, the evaluation budget, and what refuses a mapping.
 * End to end through the proxy: declared-mappings-proxy.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { serverAction } from '../../clients/mcp-proxy/authzen-action.js';
import { parseProxyConfig } from '../../clients/mcp-proxy/config.js';
import {
  celVars,
  compileValue,
  DeclaredMapping,
  DeclaredMappings,
  MappingError,
} from '../../clients/mcp-proxy/declared-mappings.js';

const mapping = (action: unknown, type: unknown, id: unknown) => ({
  evaluation: { action: { name: action }, resource: { type, id } },
});
const call = (m: DeclaredMapping, args: Record<string, unknown>, token: Record<string, unknown> = {}) =>
  m.resolve({ params: { name: 't', arguments: args }, token });
const failure = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(MappingError);
    return (error as MappingError).message;
  }
  throw new Error('expected a MappingError');
};

describe("the AuthZEN action rule in the server's namespace", () => {
  it('keeps names of the grammar and maps the others under <server>.', () => {
    expect(serverAction('crm', 'crm.read')).toBe('crm.read');
    expect(serverAction('crm', 'authzen.read')).toBe('authzen.read');
    expect(serverAction('crm', 'GET')).toBe('crm.get');
    expect(serverAction('crm', 'can_read_user')).toBe('crm.can_read_user');
    expect(serverAction('crm', 'documents/read')).toBe('crm.documents_read');
    expect(serverAction('crm', '2fa.verify')).toBe('crm.t_2fa_verify');
    expect(serverAction('crm', 'Crm.Read')).toBe('crm.crm_read');
    expect(serverAction('crm', '')).toBeUndefined();
    expect(serverAction('crm', 'a'.repeat(201))).toBeUndefined();
    expect(serverAction('crm', 'a'.repeat(200))).toBe(`crm.${'a'.repeat(200)}`);
  });
});

describe('a declared mapping', () => {
  it('decides with the literal action through the AuthZEN rule and the resource type:id from the arguments', () => {
    const m = DeclaredMapping.from(mapping('get_customer', 'customer', '$params.arguments.id'), 'crm');
    expect(m.fixedAction).toBe('crm.get_customer');
    expect(call(m, { id: 'cust-1' })).toEqual({ action: 'crm.get_customer', resource: 'customer:cust-1' });
  });

  it('evaluates CEL over params.arguments: one value allowed, another a different action', () => {
    const m = DeclaredMapping.from(
      mapping(
        "$params.arguments.amount > 100 ? 'large_transfer' : 'small_transfer'",
        'account',
        '$params.arguments.from',
      ),
      'bank',
    );
    expect(m.fixedAction).toBeUndefined();
    expect(call(m, { amount: 20, from: 'acc-1' })).toEqual({
      action: 'bank.small_transfer',
      resource: 'account:acc-1',
    });
    expect(call(m, { amount: 500, from: 'acc-1' })).toEqual({
      action: 'bank.large_transfer',
      resource: 'account:acc-1',
    });
    // index notation and params.name
    const n = DeclaredMapping.from(mapping('$params.name', 'customer', "$params.arguments['customer-id']"), 'crm');
    expect(n.resolve({ params: { name: 'lookup', arguments: { 'customer-id': 'c 9' } }, token: {} })).toEqual({
      action: 'crm.lookup',
      resource: 'customer:c 9',
    });
  });

  it('reads the verified claims as token', () => {
    const m = DeclaredMapping.from(
      mapping('read_profile', "$token.roles.exists(r, r == 'admin') ? 'admin_profile' : 'profile'", '$token.sub'),
      'crm',
    );
    expect(call(m, {}, { sub: 'alice@example.com', roles: ['admin'] })).toEqual({
      action: 'crm.read_profile',
      resource: 'admin_profile:alice@example.com',
    });
    expect(call(m, {}, { sub: 'bob', roles: [] })).toEqual({ action: 'crm.read_profile', resource: 'profile:bob' });
    // without auth: token is {}: the claim is missing and the expression fails
    expect(failure(() => call(m, {}, {}))).toMatch(/evaluation\.resource\.type: the expression .* failed/);
  });

  it('takes a $$ value as a literal $ and other values as they are', () => {
    const m = DeclaredMapping.from(mapping('$$pay', 'price', '$$5'), 'shop');
    expect(call(m, {})).toEqual({ action: 'shop.t__pay', resource: 'price:$5' });
    expect(compileValue('plain', 'x')(celVars({ params: {}, token: {} }))).toBe('plain');
    // numbers become their JSON form in the resource
    const n = DeclaredMapping.from(mapping('get', 'order', '$params.arguments.n'), 'shop');
    expect(call(n, { n: 42 })).toEqual({ action: 'shop.get', resource: 'order:42' });
    expect(
      DeclaredMapping.from(mapping('get', 'order', '$1 + 2'), 'shop').resolve({ params: {}, token: {} }).resource,
    ).toBe('order:3');
  });

  it("accepts actions under <server>. only, and the configuration's extra actions", () => {
    expect(call(DeclaredMapping.from(mapping('crm.export', 'list', 'all'), 'CRM'), {})).toEqual({
      action: 'crm.export',
      resource: 'list:all',
    });
    expect(failure(() => DeclaredMapping.from(mapping('payments.charge', 'card', 'x'), 'crm'))).toBe(
      "the action payments.charge is outside this server's namespace crm.* (list it under declared_mappings.extra_actions to accept it)",
    );
    // authzen.* is another namespace like any other
    expect(failure(() => DeclaredMapping.from(mapping('authzen.read', 'list', 'all'), 'crm'))).toMatch(
      /^the action authzen\.read is outside/,
    );
    expect(call(DeclaredMapping.from(mapping('authzen.read', 'list', 'all'), 'crm', ['authzen.read']), {}).action).toBe(
      'authzen.read',
    );
    // an action computed per call is checked per call
    const m = DeclaredMapping.from(
      mapping("$params.arguments.rail + '.pay'", 'rail', '$params.arguments.rail'),
      'crm',
      ['audit.pay'],
    );
    expect(call(m, { rail: 'crm' }).action).toBe('crm.pay');
    expect(call(m, { rail: 'audit' }).action).toBe('audit.pay');
    expect(failure(() => call(m, { rail: 'payments' }))).toMatch(/payments\.pay is outside/);
    // the calling agent picks the name: outside the grammar it lands in crm., inside it is checked
    const picked = DeclaredMapping.from(mapping('$params.arguments.act', 'account', 'a-1'), 'crm');
    expect(call(picked, { act: 'small_transfer' }).action).toBe('crm.small_transfer');
    expect(failure(() => call(picked, { act: 'authzen.small_transfer' }))).toMatch(
      /^the action authzen\.small_transfer is outside/,
    );
  });

  it('evaluates within a budget: a loop past it fails at once, a list too long for a looping mapping is refused', () => {
    const l = Array.from({ length: 200 }, (_, i) => i);
    const nested = DeclaredMapping.from(
      mapping(
        'report',
        'r',
        '$string(params.arguments.l.map(a, params.arguments.l.map(b, params.arguments.l.map(c, a + b + c))).size())',
      ),
      'crm',
    );
    expect(failure(() => call(nested, { l }))).toMatch(
      /^evaluation\.resource\.id: the expression ".*" went past its budget \(more than \d+ (loop steps|ms|list items)\)$/,
    );
    // a loop within the budget is evaluated
    const within = DeclaredMapping.from(
      mapping('report', 'r', "$params.arguments.l.exists(x, x == 199) ? 'last' : 'none'"),
      'crm',
    );
    expect(call(within, { l }).resource).toBe('r:last');
    expect(failure(() => call(within, { l: Array.from({ length: 1001 }, (_, i) => i) }))).toBe(
      'a list of 1001 items in the call, more than the 1000 a mapping that loops takes',
    );
    // a mapping without loops takes long lists
    const plain = DeclaredMapping.from(mapping('report', 'r', '$string(size(params.arguments.l))'), 'crm');
    expect(call(plain, { l: Array.from({ length: 5000 }, (_, i) => i) }).resource).toBe('r:5000');
  });

  it('fails on an expression that errs, yields nothing usable, or does not parse', () => {
    const m = DeclaredMapping.from(mapping('report', 'region', '$params.arguments.region'), 'crm');
    expect(call(m, { region: 'eu' }).resource).toBe('region:eu');
    expect(failure(() => call(m, {}))).toMatch(
      /^evaluation\.resource\.id: the expression "\$params\.arguments\.region" failed: /,
    );
    expect(failure(() => call(DeclaredMapping.from(mapping('report', 'region', '$1 / 0'), 'crm'), {}))).toMatch(
      /divide by zero/,
    );
    expect(
      failure(() =>
        call(DeclaredMapping.from(mapping('report', 'region', '$params.arguments.tags'), 'crm'), { tags: ['a'] }),
      ),
    ).toBe('evaluation.resource.id: must resolve to a non-empty string, not ["a"]');
    expect(failure(() => call(DeclaredMapping.from(mapping('report', 'region', ''), 'crm'), {}))).toMatch(
      /non-empty string/,
    );
    expect(failure(() => call(DeclaredMapping.from(mapping('$params.arguments.n', 'r', 'x'), 'crm'), { n: 1 }))).toBe(
      'evaluation.action.name: must resolve to a string, not 1',
    );
    expect(failure(() => DeclaredMapping.from(mapping('report', 'region', '$params.arguments.(('), 'crm'))).toMatch(
      /does not parse/,
    );
  });

  it('refuses a malformed mapping or the evaluations envelope', () => {
    expect(failure(() => DeclaredMapping.from('yes', 'crm'))).toMatch(/an object with an "evaluation" envelope/);
    expect(failure(() => DeclaredMapping.from({ evaluations: { evaluations: [] } }, 'crm'))).toMatch(
      /"evaluations" envelope .* not supported/,
    );
    expect(failure(() => DeclaredMapping.from({ evaluation: {}, other: 1 }, 'crm'))).toMatch(/exactly one member/);
    expect(failure(() => DeclaredMapping.from({ evaluation: { action: { name: 'x' } } }, 'crm'))).toMatch(
      /evaluation\.resource/,
    );
    expect(
      failure(() => DeclaredMapping.from({ evaluation: { action: {}, resource: { type: 'a', id: 'b' } } }, 'crm')),
    ).toMatch(/evaluation\.action/);
    expect(failure(() => DeclaredMapping.from(mapping(`$${'a'.repeat(3000)}`, 'r', 'x'), 'crm'))).toMatch(
      /longer than 2048/,
    );
  });
});

describe("a session's declared mappings", () => {
  const schema = (m: unknown) => ({ type: 'object', 'x-authzen-mapping': m });
  const tools = [
    { name: 'get_customer', inputSchema: schema(mapping('get_customer', 'customer', '$params.arguments.id')) },
    {
      name: 'transfer',
      inputSchema: schema(mapping("$params.arguments.amount > 100 ? 'large' : 'small'", 'account', 'a')),
    },
    { name: 'charge_card', inputSchema: schema(mapping('payments.charge', 'card', 'c')) },
    { name: 'get_invoice', inputSchema: schema(mapping('get_invoice', 'invoice', '$params.arguments.id')) },
    { name: 'plain', inputSchema: { type: 'object' } },
  ];

  it("are used with declared_mappings: true, the configuration's tools: entry winning", () => {
    const config = parseProxyConfig({
      agent_id: 'a',
      server: 'crm',
      declared_mappings: true,
      tools: { get_invoice: { action: 'crm.read_invoice' } },
    });
    const lines: string[] = [];
    const declared = new DeclaredMappings(config, (l) => lines.push(l));
    declared.note(tools);
    expect(declared.target({ name: 'get_customer', arguments: { id: 'c-1' } }, {})).toEqual({
      action: 'crm.get_customer',
      resource: 'customer:c-1',
    });
    expect(declared.target({ name: 'get_invoice', arguments: { id: 'i-1' } }, {})).toBeUndefined();
    expect(declared.target({ name: 'plain', arguments: {} }, {})).toBeUndefined();
    expect(() => declared.target({ name: 'charge_card', arguments: {} }, {})).toThrow(MappingError);
    expect(lines).toEqual([
      'tool "charge_card": its declared mapping is refused (the action payments.charge is outside this server\'s namespace crm.* (list it under declared_mappings.extra_actions to accept it)); its calls are refused',
    ]);
    expect(['get_customer', 'transfer', 'charge_card', 'get_invoice', 'plain'].map((t) => declared.listing(t))).toEqual(
      [{ action: 'crm.get_customer' }, 'shown', 'hidden', undefined, undefined],
    );
    // a new listing replaces the old one; later pages add to it
    declared.note([tools[4]!]);
    expect(declared.has('get_customer')).toBe(false);
    declared.note([tools[0]!], { firstPage: false });
    expect(declared.has('get_customer')).toBe(true);
  });

  it('keep the mappings of tools on pages the client has not read yet, until the listing is complete', () => {
    const declared = new DeclaredMappings(
      parseProxyConfig({ agent_id: 'a', server: 'crm', declared_mappings: true }),
      () => undefined,
    );
    // The start-up reading (every page at once): get_customer and transfer are declared.
    declared.note(tools);
    const transfer = { name: 'transfer', arguments: { amount: 500 } };
    expect(declared.target(transfer, {})).toEqual({ action: 'crm.large', resource: 'account:a' });
    // A client reads only page 1 of a listing (get_customer without its mapping now; transfer is on page 2).
    declared.note([{ name: 'get_customer', inputSchema: { type: 'object' } }], { firstPage: true, lastPage: false });
    expect(declared.has('get_customer')).toBe(false);
    expect(declared.target(transfer, {})).toEqual({ action: 'crm.large', resource: 'account:a' });
    // Page 2, the last: the listing replaces the previous one (charge_card, get_invoice and plain are gone).
    declared.note([tools[1]!], { firstPage: false, lastPage: true });
    expect(declared.target(transfer, {})).toEqual({ action: 'crm.large', resource: 'account:a' });
    expect(['get_customer', 'charge_card', 'get_invoice'].map((t) => declared.has(t))).toEqual([false, false, false]);
    // A complete one-page listing without transfer's mapping drops it.
    declared.note([{ name: 'transfer', inputSchema: { type: 'object' } }]);
    expect(declared.target(transfer, {})).toBeUndefined();
  });

  it('are ignored without declared_mappings: true', () => {
    const declared = new DeclaredMappings(parseProxyConfig({ agent_id: 'a', server: 'crm' }), () => undefined);
    declared.note(tools);
    expect(declared.target({ name: 'get_customer', arguments: { id: 'c-1' } }, {})).toBeUndefined();
    expect(declared.listing('charge_card')).toBeUndefined();
  });

  it('take declared_mappings: true, false, or { extra_actions } in the configuration', () => {
    expect(() => parseProxyConfig({ agent_id: 'a', server: 'crm', declared_mappings: 'yes' })).toThrow(
      /declared_mappings: true, false, or \{ extra_actions: \[\.\.\.\] \}/,
    );
    expect(() =>
      parseProxyConfig({ agent_id: 'a', server: 'crm', declared_mappings: { extra_actions: ['authzen.*'], more: 1 } }),
    ).toThrow(
      /declared_mappings: unknown field "more"[\s\S]*declared_mappings\.extra_actions: "authzen\.\*" is not an action/,
    );
    expect(
      parseProxyConfig({ agent_id: 'a', server: 'crm', declared_mappings: false }).declared_mappings,
    ).toBeUndefined();
    const config = parseProxyConfig({
      agent_id: 'a',
      server: 'crm',
      declared_mappings: { extra_actions: ['payments.charge'] },
    });
    expect(config.declared_mappings).toEqual({ extra_actions: ['payments.charge'] });
    const declared = new DeclaredMappings(config, () => undefined);
    declared.note(tools);
    expect(declared.target({ name: 'charge_card', arguments: {} }, {})).toEqual({
      action: 'payments.charge',
      resource: 'card:c',
    });
  });
});
