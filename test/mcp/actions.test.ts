/**
 * The proxy's action-name rules and configuration parsing (docs/mcp.md#action-names), in process.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ActionMap,
  actionPart,
  amountFrom,
  ArgumentProblem,
  defaultAction,
  fillTemplate,
} from '../../clients/mcp-proxy/actions.js';
import {
  DEFAULT_APPROVAL_WAIT_SECONDS,
  loadProxyConfig,
  parseProxyConfig,
  ProxyConfigError,
} from '../../clients/mcp-proxy/config.js';
import { withoutProxyMeta } from '../../clients/mcp-proxy/enforce.js';
import { isDecidedMethod, methodTarget } from '../../clients/mcp-proxy/methods.js';
import { PagedListing } from '../../clients/mcp-proxy/paged-listing.js';
import { ToolNames } from '../../clients/mcp-proxy/tool-names.js';
import { scratch } from './helpers/proxy.js';

const problemsOf = (value: unknown): string[] => {
  try {
    parseProxyConfig(value);
  } catch (e) {
    if (e instanceof ProxyConfigError) return e.problems;
    throw e;
  }
  return [];
};

describe('derived action names', () => {
  it('lower-cases each part, replaces every character outside [a-z0-9_] and puts t_ before a part not starting with a letter', () => {
    expect(defaultAction('files', 'read_file')).toBe('files.read_file');
    expect(defaultAction('My Server', 'Send.Mail')).toBe('my_server.send_mail');
    expect(defaultAction('files', '2fa-reset')).toBe('files.t_2fa_reset');
    expect(defaultAction('_x', 'Ünïcode')).toBe('t__x.t__n_code');
    expect(actionPart('')).toBe('t_');
    for (const [server, tool] of [
      ['a', 'b'],
      ['Ä', '9'],
      ['x.y', 'z z'],
      ['', ''],
    ]) {
      expect(defaultAction(server!, tool!)).toMatch(/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/);
    }
  });

  it('finds collisions that involve a derived name, and lets explicit shared mappings through', () => {
    const map = new ActionMap({
      server: 'files',
      tools: { write: { action: 'files.write' }, save: { action: 'files.write' }, copy: { action: 'files.read_file' } },
    });
    expect(map.collisions(['write', 'save'])).toEqual([]);
    expect(map.collisions(['Read-File', 'read_file', 'write'])).toEqual([
      { action: 'files.read_file', tools: ['Read-File', 'read_file'] },
    ]);
    expect(map.collisions(['copy', 'read_file'])).toEqual([
      { action: 'files.read_file', tools: ['copy', 'read_file'] },
    ]);
    expect(map.unknownMappings(['write'])).toEqual(['save', 'copy']);
  });

  it('fills resource templates and amounts from the arguments, refusing what is missing or of the wrong type', () => {
    const map = new ActionMap({
      server: 'pay',
      tools: { charge: { action: 'payments.charge', resource: 'customer:{customer_id}/{n}', amount: 'amount' } },
    });
    expect(map.target('charge', { customer_id: 'cus_1', n: 2, amount: 12.5 })).toEqual({
      action: 'payments.charge',
      resource: 'customer:cus_1/2',
      amount: 12.5,
    });
    expect(map.target('refund', { amount: 3 })).toEqual({ action: 'pay.refund' });
    expect(() => map.target('charge', { n: 1, amount: 1 })).toThrow(ArgumentProblem);
    expect(() => fillTemplate('x:{a}', { a: { nested: true } })).toThrow(/needs the argument "a"/);
    expect(() => amountFrom({ amount: -1 }, 'amount')).toThrow(/must be a number >= 0/);
    expect(() => amountFrom({ amount: '5' }, 'amount')).toThrow(ArgumentProblem);
    // A tool named like an Object.prototype member is an unmapped tool, not a mapping.
    expect(map.target('constructor', {})).toEqual({ action: 'pay.constructor' });
  });
});

describe('the proxy configuration', () => {
  it('reads a configuration of docs/mcp.md#configuration, with defaults and AUTHZ_ON_BEHALF_OF', () => {
    const { config } = scratch(`agent_id: research-bot
server: files
tools:
  write_file: { action: files.write, resource: "file:{path}" }
  charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }
`);
    expect(loadProxyConfig(config, { AUTHZ_ON_BEHALF_OF: 'user-7' })).toEqual({
      agent_id: 'research-bot',
      server: 'files',
      on_behalf_of: 'user-7',
      approval_wait_seconds: DEFAULT_APPROVAL_WAIT_SECONDS,
      tools: {
        write_file: { action: 'files.write', resource: 'file:{path}' },
        charge: { action: 'payments.charge', resource: 'customer:{customer_id}', amount: 'amount' },
      },
      methods: {},
      pass_through: [],
    });
    expect(
      parseProxyConfig({ agent_id: 'a', server: 's', on_behalf_of: 'file-wins' }, 'c', { AUTHZ_ON_BEHALF_OF: 'env' })
        .on_behalf_of,
    ).toBe('file-wins');
  });

  it('lists every problem at once', () => {
    expect(
      problemsOf({
        agent_id: '',
        server: 's',
        approval_wait_seconds: -1,
        ttl_seconds: 0,
        tools: { t: { action: 'A.b', resource: 'x:{a', amount: '', extra: 1 }, u: 'no' },
      }),
    ).toEqual([
      'agent_id: required, a non-empty string of at most 256 characters',
      'approval_wait_seconds: a whole number of seconds, 0..3600',
      'ttl_seconds: a whole number of seconds, 1..3600',
      'tools.t: unknown field "extra" (known: action, resource, amount)',
      'tools.t.action: "A.b" is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)',
      'tools.t.resource: unbalanced "{" or "}" in "x:{a"',
      'tools.t.amount: the name of the argument that carries the amount',
      'tools.u: a mapping with action, resource and/or amount',
    ]);
    expect(problemsOf(['a list'])).toEqual(['the configuration must be a YAML mapping (agent_id, server, tools...)']);
  });

  it('reports YAML syntax errors and unreadable files', () => {
    const { dir } = scratch('');
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'agent_id: [unclosed\n');
    expect(() => loadProxyConfig(bad, {})).toThrow(ProxyConfigError);
    expect(() => loadProxyConfig(join(dir, 'missing.yaml'), {})).toThrow(/cannot read the file/);
  });
});

describe('the decided methods (docs/mcp.md#6-resources-and-prompts-decided)', () => {
  const config = { server: 'Docs', methods: {} };

  it('maps each decided method to its action, resource and context.mcp', () => {
    expect(methodTarget(config, 'resources/read', { uri: 'file:///a.txt' })).toEqual({
      action: 'docs.resources_read',
      resource: 'file:///a.txt',
      mcp: { server: 'Docs', method: 'resources/read', uri: 'file:///a.txt' },
    });
    expect(methodTarget(config, 'resources/subscribe', { uri: 'x://y' }).action).toBe('docs.resources_read');
    expect(methodTarget(config, 'prompts/get', { name: 'greet' })).toEqual({
      action: 'docs.prompts_get',
      resource: 'prompt:greet',
      mcp: { server: 'Docs', method: 'prompts/get', prompt: 'greet', arguments: {} },
    });
    expect(
      methodTarget(config, 'completion/complete', {
        ref: { type: 'ref/resource', uri: 'x://{id}' },
        argument: { name: 'id', value: '1' },
      }),
    ).toMatchObject({
      action: 'docs.completion_complete',
      resource: 'x://{id}',
    });
    expect(
      methodTarget(config, 'completion/complete', {
        ref: { type: 'ref/prompt', name: 'greet' },
        argument: { name: 'who', value: 'A' },
        context: { arguments: {} },
      }),
    ).toMatchObject({
      resource: 'prompt:greet',
      mcp: { context: { arguments: {} } },
    });
    expect(methodTarget(config, 'logging/setLevel', { level: 'debug' })).toEqual({
      action: 'docs.logging_setlevel',
      mcp: { server: 'Docs', method: 'logging/setLevel', level: 'debug' },
    });
    expect(() => methodTarget(config, 'resources/read', {})).toThrow(ArgumentProblem);
    expect(() => methodTarget(config, 'completion/complete', { ref: { type: 'ref/prompt' } })).toThrow(
      /params\.ref\.name/,
    );
  });

  it('methods: replaces the action and fills the resource template from the params', () => {
    const mapped = parseProxyConfig({
      agent_id: 'a',
      server: 'docs',
      methods: { 'prompts/get': { action: 'prompts.use', resource: 'doc:{name}/{arguments.lang}' } },
    });
    expect(methodTarget(mapped, 'prompts/get', { name: 'greet', arguments: { lang: 'en' } })).toMatchObject({
      action: 'prompts.use',
      resource: 'doc:greet/en',
    });
    expect(() => methodTarget(mapped, 'prompts/get', { name: 'greet' })).toThrow(/needs the param "arguments.lang"/);
    expect(isDecidedMethod('resources/unsubscribe')).toBe(false);
  });

  it('refuses methods: that are not decided methods, bad actions, and pass_through: of known methods', () => {
    expect(
      problemsOf({
        agent_id: 'a',
        server: 's',
        methods: { 'tools/call': {}, 'prompts/get': { action: 'X', size: 1 } },
        pass_through: ['tasks/list', 'ping'],
      }),
    ).toEqual([
      'methods.tools/call: not a decided method (resources/read, resources/subscribe, prompts/get, completion/complete, logging/setLevel; tools/call is mapped under "tools:")',
      'methods.prompts/get: unknown field "size" (known: action, resource)',
      'methods.prompts/get.action: "X" is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)',
      'pass_through: "ping" is a method the proxy knows (it is decided or relayed already)',
    ]);
    expect(parseProxyConfig({ agent_id: 'a', server: 's', pass_through: ['tasks/list'] }).pass_through).toEqual([
      'tasks/list',
    ]);
  });

  it("drops the proxy's _meta keys in any case", () => {
    expect(
      withoutProxyMeta({
        'Agent-Authz/permit': 'x',
        'AGENT-AUTHZ/DECISION': 'y',
        'agent-authz/reason': 'z',
        progressToken: 1,
        'other/k': 2,
      }),
    ).toEqual({
      progressToken: 1,
      'other/k': 2,
    });
    expect(withoutProxyMeta(null)).toBeUndefined();
  });
});

describe('a paged tools/list', () => {
  it('keeps a tool of a page the client has not read yet, until the listing is complete (PagedListing)', () => {
    const listing = new PagedListing<string>();
    listing.note([
      ['a', 'x'],
      ['b', 'y'],
    ]);
    listing.note([['a', 'z']], { firstPage: true, lastPage: false });
    expect([listing.get('a'), listing.get('b')]).toEqual(['z', 'y']);
    expect(listing.names().sort()).toEqual(['a', 'b']);
    listing.note([['c', 'w']], { firstPage: false, lastPage: true });
    expect([listing.get('a'), listing.get('b'), listing.get('c')]).toEqual(['z', undefined, 'w']);
    // A later page whose first page was not read updates the tools it names.
    listing.note([['b', 'v']], { firstPage: false });
    expect(listing.names().sort()).toEqual(['a', 'b', 'c']);
  });

  it('still refuses a colliding tool on a page the client has not read yet (ToolNames)', () => {
    const names = new ToolNames(new ActionMap({ server: 'files', tools: {} }), () => undefined);
    names.note(['read_file', 'Read-File', 'write']);
    expect(names.collision('Read-File')).toBe('files.read_file');
    // A client reads page 1 only (read_file and write); Read-File is on page 2.
    names.note(['read_file', 'write'], { firstPage: true, lastPage: false });
    expect(names.collision('Read-File')).toBe('files.read_file');
    // Page 2, the last, without Read-File: the listing is complete and nothing collides.
    names.note([], { firstPage: false, lastPage: true });
    expect(names.collision('Read-File')).toBeUndefined();
    expect(names.collision('read_file')).toBeUndefined();
  });
});
