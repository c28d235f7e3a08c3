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
 * A rule runs only on a text that holds one of its keywords (RULE_KEYWORDS,
 * found by keywords.ts in one cheap pass), so a text with nothing to find
 * costs the keyword search, not 24 rules' scans.
 */
import { rules } from '@secretlint/secretlint-rule-preset-recommend';
import type { SecretLintRuleContext, SecretLintRuleReportHandler, SecretLintSourceCode } from '@secretlint/types';
import { KeywordIndex, type Keyword } from './keywords.js';
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
 * Each rule's keywords (gitleaks's idea): literals one of which every match of
 * the rule contains, read off the rule's source at the pinned version, so a
 * text none of whose keywords occur cannot match the rule, and the rule is not
 * run on it. `caseless`: the rule's pattern has the `i` flag. Every rule of
 * the preset has its keywords; test/mcp/output-detectors.test.ts checks that
 * the preset's rules are the ones these were read from, and that the rules
 * find the same with and without the keywords on the corpus and on texts made
 * of the keywords.
 *
 * Two are narrower than a rule's patterns read alone: the npm rule, run on
 * `result.txt`/`result.json`, only looks for `npm_` tokens (its `.npmrc` and
 * `package.json` checks go by the file's name); the GCP rule reads JSON only,
 * and a JSON key `private_key_id` is written as such or with a `\u` escape.
 */
export const RULE_KEYWORDS: Record<string, { keywords?: readonly string[]; caseless?: readonly string[] }> = {
  '@secretlint/secretlint-rule-aws': {
    keywords: [
      // Access key ids.
      ...['A3T', 'AKIA', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA', 'ASIA'],
      // Secret keys: (ACCESS|access|Access)_?(KEY|key|Key).
      ...['SS', 'ss'].flatMap((access) =>
        ['_', ''].flatMap((sep) => ['KEY', 'key', 'Key'].map((key) => `${access}${sep}${key}`)),
      ),
      // Account ids.
      ...['ACCOUNT', 'account', 'Account'],
    ],
  },
  '@secretlint/secretlint-rule-gcp': { keywords: ['private_key_id', '\\u'] },
  '@secretlint/secretlint-rule-privatekey': { keywords: ['PRIVATE KEY'] },
  '@secretlint/secretlint-rule-npm': { keywords: ['npm_'] },
  '@secretlint/secretlint-rule-basicauth': { keywords: ['@'] },
  '@secretlint/secretlint-rule-slack': {
    keywords: ['xoxb-', 'xoxp-', 'xapp-', 'xoxa-', 'xoxo-', 'xoxr-'],
    caseless: ['hooks.slack.com'],
  },
  '@secretlint/secretlint-rule-sendgrid': { keywords: ['SG.'] },
  '@secretlint/secretlint-rule-shopify': { keywords: ['shppa_', 'shpca_', 'shpat_', 'shpss_'] },
  '@secretlint/secretlint-rule-github': { keywords: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'] },
  '@secretlint/secretlint-rule-gitlab': { keywords: ['glpat-'] },
  '@secretlint/secretlint-rule-grafana': { keywords: ['glc_', 'glsa_'] },
  '@secretlint/secretlint-rule-openai': { keywords: ['T3BlbkFJ'] },
  '@secretlint/secretlint-rule-anthropic': { keywords: ['sk-ant-api0'] },
  '@secretlint/secretlint-rule-groq': { keywords: ['gsk_'] },
  '@secretlint/secretlint-rule-huggingface': { keywords: ['hf_'] },
  '@secretlint/secretlint-rule-linear': { keywords: ['lin_api_'] },
  '@secretlint/secretlint-rule-notion': { keywords: ['ntn_'] },
  '@secretlint/secretlint-rule-1password': { keywords: ['ops_ey'] },
  '@secretlint/secretlint-rule-database-connection-string': {
    caseless: ['mongodb:', 'mongodb+', 'mysql:', 'mysqlx:', 'postgres:', 'postgresql:'],
  },
  '@secretlint/secretlint-rule-hashicorp-vault': { keywords: ['hvs.', 'hvb.', 'hvr.'] },
  '@secretlint/secretlint-rule-vercel': { keywords: ['vcp_', 'vci_', 'vca_', 'vcr_', 'vck_'] },
  '@secretlint/secretlint-rule-databricks': { keywords: ['dapi'] },
  '@secretlint/secretlint-rule-docker': { keywords: ['dckr_pat_'] },
  '@secretlint/secretlint-rule-figma': { keywords: ['figd_'] },
};

/** The preset's rules that scan text, each with the options it is run with. */
const SCANNERS = rules
  .filter((rule) => rule.meta.id !== '@secretlint/secretlint-rule-filter-comments')
  .map((rule) => ({
    id: rule.meta.id,
    rule,
    options: rule.meta.id === '@secretlint/secretlint-rule-aws' ? { enableIDScanRule: true } : {},
  }));

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
  readonly #handlers: Array<{ id: string; handler: SecretLintRuleReportHandler; keywords: number[] | undefined }>;
  readonly #keywords: KeywordIndex;

  constructor() {
    const context: SecretLintRuleContext = {
      sharedOptions: {},
      createTranslator: () => (messageId) => ({ message: '', messageId: String(messageId), data: undefined }),
      report: ({ message, range }) => {
        const rule = secretRuleName(message.messageId);
        this.#sink.push({
          start: range[0],
          end: rule === 'aws-secret-access-key' ? awsSecretEnd(this.#text, range) : range[1],
          kind: 'secret',
          rule,
        });
      },
      ignore: () => undefined,
    };
    const all: Keyword[] = [];
    const indexesOf = (id: string): number[] | undefined => {
      const entry = RULE_KEYWORDS[id];
      if (entry === undefined) return undefined;
      const own = [
        ...(entry.keywords ?? []).map((text) => ({ text })),
        ...(entry.caseless ?? []).map((text) => ({ text, caseless: true })),
      ];
      all.push(...own);
      return own.map((_, i) => all.length - own.length + i);
    };
    this.#handlers = SCANNERS.map(({ id, rule, options }) => ({
      id,
      handler: (rule.create as (c: SecretLintRuleContext, o: object) => SecretLintRuleReportHandler)(context, options),
      keywords: indexesOf(id),
    }));
    this.#keywords = new KeywordIndex(all);
  }

  scan(text: string, json: boolean, gated: boolean): Span[] {
    const source = sourceOf(text, json);
    const found: Span[] = [];
    const present = gated ? this.#keywords.present(text) : undefined;
    this.#sink = found;
    this.#text = text;
    try {
      // Every rule of the preset but the .p12 check (never reached: ext is .txt or .json) answers synchronously.
      for (const { handler, keywords } of this.#handlers)
        if (present === undefined || keywords === undefined || keywords.some((k) => present[k]))
          void handler.file?.(source);
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
 * account rule reads whole. `gated: false` runs every rule on the text,
 * whatever its keywords (the reference the keywords are tested against).
 *
 * @example
 * ```ts
 * const spans = findSecrets('export AWS_KEY=AKIAZ3MHJ8PTYQ2XN4WB', false);
 * console.log(spans.map((s) => [s.rule, s.start])); // => [ [ 'aws-access-key', 15 ] ]
 * ```
 */
export function findSecrets(text: string, json = false, gated = true): Span[] {
  scanner ??= new SecretScanner();
  return scanner.scan(text, json, gated);
}
