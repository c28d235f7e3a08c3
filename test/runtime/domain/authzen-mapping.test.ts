/**
 * The pure half of runtime/domain/authzen.ts: AuthZEN evaluation -> decision
 * request, batch defaults, the run fields, and the shape checks with the
 * documented error codes (docs/api.md#authzen) and JSON pointers.
 */
import { describe, expect, it } from 'vitest';
import {
  authzenAction,
  evaluationsSemantic,
  readEvaluation,
  runFields,
  toDecisionInput,
  withDefaults,
} from '../../../runtime/domain/authzen.js';
import { ApiError } from '../../../runtime/errors/api-error.js';

const base = {
  subject: { type: 'agent', id: 'bot' },
  action: { name: 'orders.read' },
  resource: { type: 'order', id: '1' },
};

function failure(fn: () => unknown): { code: string; message: string; path: string | undefined } {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    const error = e as ApiError;
    return { code: error.code, message: error.message, path: error.details?.[0]?.path };
  }
  throw new Error('expected an ApiError');
}

describe('AuthZEN mapping', () => {
  it('maps subject, action, resource, context and amount', () => {
    const input = toDecisionInput(
      readEvaluation({
        subject: { type: 'agent', id: 'bot', properties: { team: 'support' } },
        action: { name: 'payments.refund' },
        resource: { type: 'order', id: '1001', properties: { region: 'eu' } },
        context: { amount: 20, channel: 'chat', subject: 'overwritten' },
      }),
    );
    expect(input).toEqual({
      agent_id: 'bot',
      action: 'payments.refund',
      resource: 'order:1001',
      amount: 20,
      context: {
        amount: 20,
        channel: 'chat',
        subject: { team: 'support' },
        action: { name: 'payments.refund' },
        resource: { region: 'eu' },
      },
    });
    // Not a number: no amount.
    expect(toDecisionInput({ ...base, context: { amount: '20' } })).not.toHaveProperty('amount');
    expect(toDecisionInput(readEvaluation({ ...base, context: null })).context).toEqual({
      subject: {},
      action: { name: 'orders.read' },
      resource: {},
    });
    // The name as sent replaces a property called name; the properties are kept.
    expect(
      toDecisionInput({ ...base, action: { name: 'GET', properties: { name: 'x', method: 'GET' } } }),
    ).toMatchObject({
      action: 'authzen.get',
      context: { action: { name: 'GET', method: 'GET' } },
    });
  });

  it('reads session_id and on_behalf_of from the context when they are strings, at most 256 characters', () => {
    expect(runFields({ session_id: 'run_42', on_behalf_of: 'user_7' })).toEqual({
      session_id: 'run_42',
      on_behalf_of: 'user_7',
    });
    expect(runFields({ session_id: 42, on_behalf_of: null })).toEqual({});
    expect(runFields(undefined)).toEqual({});
    expect(failure(() => runFields({ session_id: 'x'.repeat(257) }, '/evaluations/1'))).toEqual({
      code: 'validation.invalid_field',
      message: 'evaluations[1].context.session_id must NOT have more than 256 characters',
      path: '/evaluations/1/context/session_id',
    });
    expect(failure(() => toDecisionInput({ ...base, context: { on_behalf_of: 'u'.repeat(300) } })).code).toBe(
      'validation.invalid_field',
    );
  });

  it('applies batch defaults key by key; an entry key replaces the default whole', () => {
    const defaults = {
      subject: { type: 'agent', id: 'bot', properties: { a: 1 } },
      context: { x: 1 },
      options: { ignored: true },
    };
    expect(
      withDefaults(defaults, { action: { name: 'orders.read' }, subject: { type: 'agent', id: 'other' } }),
    ).toEqual({
      subject: { type: 'agent', id: 'other' },
      action: { name: 'orders.read' },
      context: { x: 1 },
    });
    expect(withDefaults(defaults, 'not an object')).toBe('not an object');
    // An unknown key of the entry is kept by the merge and ignored by the check.
    expect(withDefaults(defaults, { ...base, extra: 1 })).toHaveProperty('extra', 1);
    expect(readEvaluation(withDefaults(defaults, { ...base, extra: 1 }), '/evaluations/0')).toEqual({
      ...base,
      context: { x: 1 },
    });
  });

  it('refuses bad shapes with the codes and paths of the route schema', () => {
    expect(failure(() => readEvaluation({ action: base.action, resource: base.resource }))).toEqual({
      code: 'validation.missing_field',
      message: 'subject is required',
      path: '/subject',
    });
    expect(failure(() => readEvaluation({ ...base, action: {} }, '/evaluations/3'))).toEqual({
      code: 'validation.missing_field',
      message: 'evaluations[3].action.name is required',
      path: '/evaluations/3/action/name',
    });
    expect(failure(() => readEvaluation({ ...base, subject: { type: 'agent', id: '' } })).code).toBe(
      'validation.invalid_field',
    );
    expect(failure(() => readEvaluation({ ...base, resource: { type: 'order', id: 1 } })).code).toBe(
      'validation.invalid_field',
    );
    expect(failure(() => readEvaluation({ ...base, subject: { ...base.subject, properties: [] } })).path).toBe(
      '/subject/properties',
    );
    expect(readEvaluation({ ...base, subject: { ...base.subject, role: 'x' } }).subject).toEqual(base.subject);
    expect(failure(() => readEvaluation(7, '/evaluations/0'))).toMatchObject({
      code: 'validation.invalid_field',
      path: '/evaluations/0',
    });
    expect(
      failure(() => toDecisionInput({ ...base, resource: { type: 't'.repeat(24), id: 'x'.repeat(1000) } })).path,
    ).toBe('/resource');
    expect(failure(() => toDecisionInput({ ...base, context: { amount: -0.5 } }))).toMatchObject({
      code: 'validation.invalid_field',
      path: '/context/amount',
    });
  });

  it('maps action names outside the grammar to authzen.<name>, and refuses names over 200 characters', () => {
    expect(authzenAction('orders.read')).toBe('orders.read');
    expect(authzenAction('can_read_user')).toBe('authzen.can_read_user');
    expect(authzenAction('GET')).toBe('authzen.get');
    expect(authzenAction('documents/read')).toBe('authzen.documents_read');
    expect(authzenAction('Orders.Read')).toBe('authzen.orders_read');
    expect(authzenAction('orders.*')).toBe('authzen.orders__');
    expect(authzenAction('2fa')).toBe('authzen.t_2fa');
    expect(authzenAction('_x')).toBe('authzen.t__x');
    expect(authzenAction('é')).toBe('authzen.t__');
    expect(authzenAction('')).toBe('authzen.t_');
    expect(authzenAction('a'.repeat(200))).toBe(`authzen.${'a'.repeat(200)}`);
    expect(failure(() => authzenAction('a'.repeat(201), '/evaluations/4'))).toEqual({
      code: 'validation.invalid_action',
      message: 'evaluations[4].action.name must NOT have more than 200 characters',
      path: '/evaluations/4/action/name',
    });
  });

  it('reads options.evaluations_semantic: the three values, execute_all by default, anything else refused', () => {
    expect(evaluationsSemantic(undefined)).toBe('execute_all');
    expect(evaluationsSemantic({})).toBe('execute_all');
    expect(evaluationsSemantic({ other: 1 })).toBe('execute_all');
    for (const value of ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'])
      expect(evaluationsSemantic({ evaluations_semantic: value })).toBe(value);
    for (const value of ['first_deny', 'EXECUTE_ALL', 1, null]) {
      expect(failure(() => evaluationsSemantic({ evaluations_semantic: value }))).toMatchObject({
        code: 'validation.invalid_field',
        path: '/options/evaluations_semantic',
      });
    }
  });
});
