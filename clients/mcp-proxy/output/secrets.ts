/**
 * The `secrets` detector (docs/mcp.md#detectors): secretlint's recommended
 * preset (@secretlint/secretlint-rule-preset-recommend, pinned), each rule's
 * `create(context).file(source)` called directly on the text, without
 * secretlint's linter pipeline. The context is the smallest the rules use:
 * a translator that answers the message id only (a finding never carries the
 * matched text), `report` collecting ranges, `ignore` unused.
 *
 * Left out: the preset's comment filter (`secretlint-disable` comments would
 * let the upstream switch detection off) and the GCP `.p12` check (it reads a
 * file from disk). The AWS rule runs with `enableIDScanRule`, so bare access
 * key ids (`AKIA…`) count, not only `aws_secret_access_key = …` assignments.
 */
import { rules } from '@secretlint/secretlint-rule-preset-recommend';
import type { SecretLintRuleContext, SecretLintRuleReportHandler, SecretLintSourceCode } from '@secretlint/types';
import type { Span } from './spans.js';

/** A rule's name in findings, by the message id it reports: kebab-case, with the familiar names for the mixed-case ids. */
const RULE_NAMES: Record<string, string> = {
  AWSAccessKeyID: 'aws-access-key',
  AWSSecretAccessKey: 'aws-secret-access-key',
  AWSAccountID: 'aws-account-id',
  BasicAuth: 'password-in-url',
  PrivateKey: 'private-key',
  PrivateKeyJSON: 'gcp-service-account-key',
  IncomingWebhook: 'slack-webhook',
  Npmrc_authToken: 'npmrc-auth-token',
  PackageJSON_xOauthToken: 'github-oauth-url',
  MongoDBConnection: 'mongodb-connection-string',
  MySQLConnection: 'mysql-connection-string',
  PostgreSQLConnection: 'postgresql-connection-string',
  OPS_TOKEN: '1password-service-account-token',
};

/**
 * A finding's rule name for a secretlint message id.
 *
 * @example
 * ```ts
 * console.log(secretRuleName('AWSAccessKeyID'), secretRuleName('GITHUB_TOKEN')); // => aws-access-key github-token
 * ```
 */
export function secretRuleName(messageId: string): string {
  return RULE_NAMES[messageId] ?? messageId.toLowerCase().replaceAll('_', '-');
}

/**
 * Gates of the rules whose scan costs more than 0.05 ms on 64 KiB of text: a
 * text none of whose gate strings occur cannot match the rule (each is a
 * literal every one of the rule's patterns requires, read off the rule's
 * source at the pinned version), so the rule is not run on it. A rule
 * without a gate always runs. test/mcp/output-detectors.test.ts checks every
 * gate against the rule's true positives, and that the preset's rules are the
 * ones these gates were read from.
 */
export const RULE_GATES: Record<string, { literals?: readonly string[]; pattern?: RegExp }> = {
  '@secretlint/secretlint-rule-aws': {
    literals: ['A3T', 'AKIA', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA', 'ASIA', 'SECRET', 'secret', 'Secret', 'ACCOUNT', 'account', 'Account'],
  },
  '@secretlint/secretlint-rule-slack': { literals: ['xoxb-', 'xoxp-', 'xapp-', 'xoxa-', 'xoxo-', 'xoxr-'], pattern: /hooks\.slack\.com/i },
  '@secretlint/secretlint-rule-shopify': { literals: ['shppa_', 'shpca_', 'shpat_', 'shpss_'] },
  '@secretlint/secretlint-rule-gitlab': { literals: ['glpat-'] },
  '@secretlint/secretlint-rule-huggingface': { literals: ['hf_'] },
  '@secretlint/secretlint-rule-grafana': { literals: ['glc_', 'glsa_'] },
  '@secretlint/secretlint-rule-database-connection-string': { pattern: /mongodb|mysql|postgres/i },
  '@secretlint/secretlint-rule-hashicorp-vault': { literals: ['hvs.', 'hvb.', 'hvr.'] },
  '@secretlint/secretlint-rule-databricks': { literals: ['dapi'] },
};

const gateOpen = (id: string, text: string): boolean => {
  const gate = RULE_GATES[id];
  if (gate === undefined) return true;
  return (gate.literals?.some((l) => text.includes(l)) ?? false) || (gate.pattern?.test(text) ?? false);
};

/** The preset's rules that scan text, each with the options it is run with. */
const SCANNERS = rules
  .filter((rule) => rule.meta.id !== '@secretlint/secretlint-rule-filter-comments')
  .map((rule) => ({ id: rule.meta.id, rule, options: rule.meta.id === '@secretlint/secretlint-rule-aws' ? { enableIDScanRule: true } : {} }));

/** The ids of the preset's rules the detector runs. */
export const SECRET_RULE_IDS: readonly string[] = SCANNERS.map((s) => s.id);

/** The source object the rules read: `content`, `ext` and `filePath` (no file behind it). */
function sourceOf(content: string, json: boolean): SecretLintSourceCode {
  const filePath = json ? 'result.json' : 'result.txt';
  const unsupported = () => {
    throw new Error('not available to rules run by the gateway');
  };
  return {
    hasBOM: false,
    content,
    filePath,
    physicalFilePath: undefined,
    contentType: 'text',
    ext: json ? '.json' : '.txt',
    getFilePath: () => filePath,
    getPhysicalFilePath: () => undefined,
    locationToRange: unsupported,
    rangeToLocation: unsupported,
    positionToIndex: unsupported,
    indexToPosition: unsupported,
  };
}

/**
 * Where an `aws_secret_access_key = "…"` finding ends. The AWS rule (12.0.0)
 * reports a range that starts at the assignment and is as long as the key,
 * so it stops short of the key's end: a redaction of that range would leave
 * the key's tail. The finding runs to the end of the 40-character key.
 */
function awsSecretEnd(text: string, range: readonly [number, number]): number {
  const key = /[A-Za-z0-9/+=]{40}/g;
  key.lastIndex = range[0];
  for (let m = key.exec(text); m !== null && m.index < range[0] + 200; m = key.exec(text)) {
    // The key is the 40 characters after the name and the connector, not a part of the name.
    if (m.index > range[0] && !/[A-Za-z0-9_]/.test(text[m.index - 1]!)) return Math.max(range[1], m.index + 40);
    key.lastIndex = m.index + 1;
  }
  return range[1];
}

/** The handlers of every rule, made once, reporting into `sink` (set per scan: scans are synchronous). */
class SecretScanner {
  #sink: Span[] = [];
  #text = '';
  readonly #handlers: Array<{ id: string; handler: SecretLintRuleReportHandler }>;

  constructor() {
    const context: SecretLintRuleContext = {
      sharedOptions: {},
      createTranslator: () => (messageId) => ({ message: '', messageId: String(messageId), data: undefined }),
      report: ({ message, range }) => {
        const rule = secretRuleName(message.messageId);
        this.#sink.push({ start: range[0], end: rule === 'aws-secret-access-key' ? awsSecretEnd(this.#text, range) : range[1], kind: 'secret', rule });
      },
      ignore: () => undefined,
    };
    this.#handlers = SCANNERS.map(({ id, rule, options }) => ({
      id,
      handler: (rule.create as (c: SecretLintRuleContext, o: object) => SecretLintRuleReportHandler)(context, options),
    }));
  }

  scan(text: string, json: boolean): Span[] {
    const source = sourceOf(text, json);
    const found: Span[] = [];
    this.#sink = found;
    this.#text = text;
    try {
      // Every rule of the preset but the .p12 check (never reached: ext is .txt or .json) answers synchronously.
      for (const { id, handler } of this.#handlers) if (gateOpen(id, text)) void handler.file?.(source);
    } finally {
      this.#sink = [];
      this.#text = '';
    }
    return found;
  }
}

let scanner: SecretScanner | undefined;

/**
 * Where secrets are in `text`, by secretlint's recommended rules; `json`: the
 * text is a JSON document (a `structuredContent`), which the GCP service
 * account rule reads whole.
 *
 * @example
 * ```ts
 * const spans = findSecrets('export AWS_KEY=AKIAZ3MHJ8PTYQ2XN4WB', false);
 * console.log(spans.map((s) => [s.rule, s.start])); // => [ [ 'aws-access-key', 15 ] ]
 * ```
 */
export function findSecrets(text: string, json = false): Span[] {
  scanner ??= new SecretScanner();
  return scanner.scan(text, json);
}
