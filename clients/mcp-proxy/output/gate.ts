/**
 * The gateway's output side for one client session (docs/mcp.md#what-the-gateway-reads-in-results):
 * each result of a decided `tools/call`, `resources/read` or `prompts/get` is
 * read (reader.ts); when it carries labels or findings they are recorded on
 * its decision (`POST /v1/decisions/:id/output`, which adds the labels to the
 * session) before the result is relayed. A result a detector blocks, or whose
 * record fails (fail closed), never reaches the client: a tool result with
 * `isError: true`, or for resources and prompts a JSON-RPC error `-32001`.
 */
import { AuthzError, type AuthzClient } from '../../typescript/index.js';
import { DENIED_CODE, META_DECISION, META_REASON, type RpcError } from '../enforce.js';
import type { OutputConfig } from './config.js';
import { OutputReader, READ_METHODS, type ReadOutcome } from './reader.js';

/** What to send the client instead of the upstream's result. */
export type OutputAnswer = { result: Record<string, unknown> } | { error: RpcError };

export interface OutputGateOptions {
  config: OutputConfig;
  authz: Pick<AuthzClient, 'recordOutput'>;
  log: (line: string) => void;
}

export class OutputGate {
  readonly #reader: OutputReader;
  readonly #authz: Pick<AuthzClient, 'recordOutput'>;
  readonly #log: (line: string) => void;

  constructor(options: OutputGateOptions) {
    this.#reader = new OutputReader(options.config);
    this.#authz = options.authz;
    this.#log = options.log;
  }

  /** Notes the upstream's tools (their annotations say which reach the open world). */
  noteTools(tools: ReadonlyArray<{ name: string; annotations?: { openWorldHint?: boolean } | undefined }>): void {
    this.#reader.noteTools(tools);
  }

  /** Whether results of `method` are read. */
  reads(method: string): boolean {
    return READ_METHODS.has(method);
  }

  /**
   * The answer for the client to one result of decision `decisionId`: the
   * result (as it came, or redacted) once its labels and findings are
   * recorded, or a block.
   */
  async answer(
    method: string,
    tool: string | undefined,
    upstream: Record<string, unknown>,
    decisionId: string,
  ): Promise<OutputAnswer> {
    let outcome: ReadOutcome;
    try {
      outcome = this.#reader.read(method, tool, upstream);
    } catch (error) {
      return blocked(
        method,
        decisionId,
        `the result could not be read (${(error as Error).message})`,
        'output.unreadable',
      );
    }
    if (outcome.labels.length > 0 || outcome.findings.length > 0) {
      try {
        await this.#authz.recordOutput(decisionId, { labels: outcome.labels, findings: outcome.findings });
      } catch (error) {
        const code = error instanceof AuthzError ? error.code : 'mcp_proxy.internal_error';
        this.#log(`could not record the output of decision ${decisionId}: ${code}: ${(error as Error).message}`);
        return blocked(method, decisionId, `the result could not be recorded (${code})`, 'output.not_recorded');
      }
    }
    if (outcome.blockedBy.length > 0)
      return blocked(method, decisionId, `${outcome.blockedBy.join(' and ')} in the result`, 'output.blocked');
    return { result: outcome.result };
  }
}

/** A blocked result: for a tool call a result with `isError`, else a JSON-RPC error. */
function blocked(method: string, decisionId: string, why: string, reason: string): OutputAnswer {
  const text = `blocked by agent-authz: ${why}`;
  if (method === 'tools/call')
    return {
      result: {
        content: [{ type: 'text', text }],
        isError: true,
        _meta: { [META_DECISION]: decisionId, [META_REASON]: reason },
      },
    };
  return { error: { code: DENIED_CODE, message: text, data: { reason, decision_id: decisionId } } };
}
