/**
 * The gateway's detectors on a corpus (issue 48; docs/mcp.md#detectors): true
 * positives of every kind (secrets of the well-known providers, e-mail
 * addresses, phone numbers, payment cards, IBANs) and near misses that must not
 * match (random hex, UUIDs, order numbers, base64 blobs, dates, failing
 * checksums). Precision and recall are computed here, per detector, and
 * printed; each item that goes wrong is named. Also: redaction, the secret
 * rules' keywords against the preset's rules (the rules find the same with
 * and without them), and the phone checks' budget.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rules } from '@secretlint/secretlint-rule-preset-recommend';
import { findPii, PHONE_CHECKS_PER_TEXT } from '../../clients/mcp-proxy/output/pii.js';
import { findSecrets, RULE_KEYWORDS, SECRET_RULE_IDS } from '../../clients/mcp-proxy/output/secrets.js';
import { OutputReader } from '../../clients/mcp-proxy/output/reader.js';
import { redacted, type Span } from '../../clients/mcp-proxy/output/spans.js';

const b62 = (n: number, seed: string) => {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < n; i++) out += abc[(seed.charCodeAt(i % seed.length) * 31 + i * 17) % abc.length];
  return out;
};
const hex = (n: number) =>
  randomBytes(Math.ceil(n / 2))
    .toString('hex')
    .slice(0, n);
const pem = `-----BEGIN RSA PRIVATE KEY-----\nMII${b62(60, 'pem1')}\n${b62(64, 'pem2')}\n${b62(40, 'pem3')}==\n-----END RSA PRIVATE KEY-----`;

/** A 1Password service account token's body: base64 of a JSON object (the rule decodes it), whose `}` is alone in its last group (`fQ==`). */
const OPS = (() => {
  const body = JSON.stringify({
    signInAddress: 'my.1password.com',
    email: 'svc@example.org',
    srpX: b62(64, 'op1'),
    muk: { k: b62(43, 'op2') },
  });
  const padded = `${body.slice(0, -1).padEnd(body.length - 1 + ((4 - (body.length % 3)) % 3), ' ')}}`;
  return Buffer.from(padded).toString('base64');
})();
/** A GCP service account key file, as a result's structuredContent is read (JSON text). */
const GCP_JSON = JSON.stringify({
  type: 'service_account',
  project_id: 'demo',
  private_key_id: hex(40),
  private_key: `${pem}\n`,
  client_email: 'svc@demo.iam.gserviceaccount.com',
});

/** [text, the rule that must find the marked part, the part] */
const SECRETS: Array<[string, string, string]> = [
  ['key id AKIAZ3MHJ8PTYQ2XN4WB in the log', 'aws-access-key', 'AKIAZ3MHJ8PTYQ2XN4WB'],
  [
    'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9xK2mT4aQ"',
    'aws-secret-access-key',
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9xK2mT4aQ',
  ],
  [`token ghp_${b62(36, 'gh')} used`, 'github-token', `ghp_${b62(36, 'gh')}`],
  [`GITHUB=github_pat_${b62(82, 'ghfg')}`, 'github-token', `github_pat_${b62(82, 'ghfg')}`],
  [
    'SLACK_TOKEN=xoxb-2817364523-1827364518273-AbCdEfGhIjKlMnOpQrStUvWx',
    'slack-token',
    'xoxb-2817364523-1827364518273-AbCdEfGhIjKlMnOpQrStUvWx',
  ],
  [
    'hook https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/abcdefghijklmnopqrstuvwx',
    'slack-webhook',
    'https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/abcdefghijklmnopqrstuvwx',
  ],
  [`key:\n${pem}\n`, 'private-key', '-----BEGIN RSA PRIVATE KEY-----'],
  ['db https://deploy:Xk9mQ2vLp7Rz@build.example.com/path', 'password-in-url', 'deploy:Xk9mQ2vLp7Rz'],
  [`glpat-${b62(20, 'gl')}`, 'gitlab-personal-access-token', `glpat-${b62(20, 'gl')}`],
  [
    `HF_TOKEN=hf_${'AbcDefGhiJklMnoPqrStuVwxYzaBcDeFgH'}`,
    'huggingface-user-access-token',
    'hf_AbcDefGhiJklMnoPqrStuVwxYzaBcDeFgH',
  ],
  [`OPENAI_API_KEY=sk-proj-${b62(74, 'oa1')}T3BlbkFJ${b62(74, 'oa2')}`, 'openai-token', 'T3BlbkFJ'],
  [`ANTHROPIC_API_KEY=sk-ant-api03-${b62(93, 'an')}AA`, 'anthropic-api-key', 'sk-ant-api03-'],
  [`//registry.npmjs.org/:_authToken=npm_${b62(36, 'npm')}`, 'npm-access-token', `npm_${b62(36, 'npm')}`],
  [`SENDGRID=SG.${b62(22, 'sg1')}.${b62(43, 'sg2')}`, 'sendgrid-key', 'SG.'],
  [`shpat_${hex(32)}`, 'shopify-key', 'shpat_'],
  [
    'DATABASE_URL=postgres://app:Zq8xLm2Pw9@db.internal:5432/orders',
    'postgresql-connection-string',
    'postgres://app:Zq8xLm2Pw9@db.internal:5432/orders',
  ],
  [
    'MONGO=mongodb+srv://svc:Tr0ub4dor3x@cluster0.example.mongodb.net/prod',
    'mongodb-connection-string',
    'mongodb+srv://svc:Tr0ub4dor3x@cluster0.example.mongodb.net/prod',
  ],
  [`DATABRICKS_TOKEN=dapi${hex(32)}`, 'databricks-personal-access-token', 'dapi'],
  [`GRAFANA=glsa_${b62(32, 'gf')}_${hex(8)}`, 'grafana-service-account-token', 'glsa_'],
  [`VAULT_TOKEN=hvs.${b62(95, 'hv')}`, 'hashicorp-vault-service-token', 'hvs.'],
  [`DOCKER=dckr_pat_${b62(27, 'dk')}`, 'docker-personal-access-token', 'dckr_pat_'],
  [`FIGMA=figd_${b62(43, 'fg')}`, 'figma-personal-access-token', 'figd_'],
  [`GROQ=gsk_${b62(52, 'gq')}`, 'groq-api-key', 'gsk_'],
  [`LINEAR=lin_api_${b62(40, 'li')}`, 'linear-api-token', 'lin_api_'],
  [`VERCEL=vcp_${b62(24, 'vc')}`, 'vercel-personal-access-token', 'vcp_'],
  ['"aws_account_id": "1234-5678-9012"', 'aws-account-id', '1234-5678-9012'],
  [`NOTION_TOKEN=ntn_${'48213957106'}${b62(35, 'nt')}`, 'notion-integration-token', 'ntn_'],
  [`OP_SERVICE_ACCOUNT_TOKEN=ops_${OPS}`, '1password-service-account-token', `ops_${OPS}`],
];

const PII: Array<[string, string, string]> = [
  ['write to ada.lovelace@example.org today', 'email', 'ada.lovelace@example.org'],
  ['cc: "Grace" <grace+billing@mail.navy.example.com>', 'email', 'grace+billing@mail.navy.example.com'],
  ['HR: j_doe-42@corp.example.co.uk.', 'email', 'j_doe-42@corp.example.co.uk'],
  ['London office +44 20 7946 0958', 'phone', '+44 20 7946 0958'],
  ['call +1 415-555-2671 after 5', 'phone', '+1 415-555-2671'],
  ['Berlin: +49 30 901820', 'phone', '+49 30 901820'],
  ['Paris +33 1 42 68 53 00', 'phone', '+33 1 42 68 53 00'],
  ['desk (415) 555-2671 ext', 'phone', '(415) 555-2671'],
  ['mobile 212-555-0147.', 'phone', '212-555-0147'],
  ['fax 650.253.0000', 'phone', '650.253.0000'],
  ['Visa 4111 1111 1111 1111 exp 12/29', 'card', '4111 1111 1111 1111'],
  ['MC 5555-5555-5555-4444', 'card', '5555-5555-5555-4444'],
  ['amex 3782 822463 10005', 'card', '3782 822463 10005'],
  ['card=6011111111111117;', 'card', '6011111111111117'],
  ['pay to DE89 3704 0044 0532 0130 00 by Friday', 'iban', 'DE89 3704 0044 0532 0130 00'],
  ['IBAN: GB82WEST12345698765432', 'iban', 'GB82WEST12345698765432'],
  ['FR14 2004 1010 0505 0001 3M02 606', 'iban', 'FR14 2004 1010 0505 0001 3M02 606'],
  ['NL91ABNA0417164300 (NL)', 'iban', 'NL91ABNA0417164300'],
];

/** Texts in which no detector may find anything. */
const NEAR_MISSES: string[] = [
  `sha256 ${hex(64)}`,
  `md5 ${hex(32)} and ${hex(40)}`,
  `request ${'550e8400-e29b-41d4-a716-446655440000'} and ${globalThis.crypto.randomUUID()}`,
  'order ORD-2024-118342 shipped, invoice INV-00012345, ticket #100234987',
  'order number 4929 3812 7711 (12 digits), ref 1234567812345678',
  `blob ${randomBytes(96).toString('base64')}`,
  `data:image/png;base64,${randomBytes(120).toString('base64')}`,
  'released 2026-11-28 at 10:30, epoch 1732790400, build 20261128.4',
  'version 1.2.3.4 on 192.168.100.200 port 8443',
  'card 4111 1111 1111 1112 fails Luhn',
  'IBAN DE89 3704 0044 0532 0130 01 fails its checksum',
  'the AWS docs example AKIAIOSFODNN7EXAMPLE is ignored',
  'ISBN 978-3-16-148410-0, part no. 12-3456-7890',
  'user@localhost is no address, nor is @mention or a@b',
  'quantities 12 345 678 and 98 765 432',
  'tracking 1Z999AA10123456784, SKU-100233',
  'aws_secret_access_key = "${AWS_SECRET_ACCESS_KEY}"',
  'see https://example.com/users/42/orders?page=3',
  'the private key lives in the vault; -----BEGIN PUBLIC KEY----- is fine',
];

interface Score {
  tp: number;
  fn: number;
  fp: number;
  misses: string[];
}

/** Recall over the true positives, precision over every span found (true positives' extra spans and near misses' count as false). */
function score(
  detect: (text: string) => Span[],
  positives: Array<[string, string, string]>,
  negatives: string[],
): Score {
  const s: Score = { tp: 0, fn: 0, fp: 0, misses: [] };
  for (const [text, rule, part] of positives) {
    const spans = detect(text);
    const at = text.indexOf(part);
    const hit = spans.find((sp) => sp.rule === rule && sp.start <= at && sp.end >= at + part.length);
    if (hit) s.tp++;
    else {
      s.fn++;
      s.misses.push(`missed ${rule}: ${text.slice(0, 60)} (found ${JSON.stringify(spans.map((sp) => sp.rule))})`);
    }
    for (const sp of spans)
      if (sp !== hit && !spans.some((o) => o === hit && o.start <= sp.start && o.end >= sp.end)) {
        s.fp++;
        s.misses.push(`extra ${sp.rule} in: ${text.slice(0, 60)}`);
      }
  }
  for (const text of negatives) {
    for (const sp of detect(text)) {
      s.fp++;
      s.misses.push(`false ${sp.rule}: ${text.slice(sp.start, sp.end)}`);
    }
  }
  return s;
}

const ratio = (a: number, b: number) => (b === 0 ? 1 : a / b);

describe('detectors on a corpus', () => {
  const secrets = score((t) => findSecrets(t), SECRETS, [...NEAR_MISSES, ...PII.map((p) => p[0])]);
  const pii = score((t) => findPii(t, ['US']), PII, [
    ...NEAR_MISSES,
    ...SECRETS.map((p) => p[0]).filter((t) => !t.includes('@')),
  ]);

  it('prints precision and recall per detector', () => {
    for (const [name, s] of [
      ['secrets', secrets],
      ['pii', pii],
    ] as const) {
      console.log(
        `${name}: ${s.tp} true positives, ${s.fn} missed, ${s.fp} false: precision ${ratio(s.tp, s.tp + s.fp).toFixed(3)}, recall ${ratio(s.tp, s.tp + s.fn).toFixed(3)}${s.misses.length ? `\n  ${s.misses.join('\n  ')}` : ''}`,
      );
    }
    expect(secrets.tp + secrets.fn).toBe(SECRETS.length);
  });

  it('secrets: every true positive found by its rule, nothing in the near misses', () => {
    expect(secrets.misses).toEqual([]);
    expect(ratio(secrets.tp, secrets.tp + secrets.fp)).toBe(1);
    expect(ratio(secrets.tp, secrets.tp + secrets.fn)).toBe(1);
  });

  it('pii: every true positive found by its rule, nothing in the near misses', () => {
    expect(pii.misses).toEqual([]);
    expect(ratio(pii.tp, pii.tp + pii.fp)).toBe(1);
    expect(ratio(pii.tp, pii.tp + pii.fn)).toBe(1);
  });

  it('redaction replaces each finding (overlaps once) and keeps the rest', () => {
    const text = 'mail ada@example.org or call +44 20 7946 0958, key AKIAZ3MHJ8PTYQ2XN4WB.';
    const spans = [...findPii(text), ...findSecrets(text)];
    expect(redacted(text, spans)).toBe('mail [redacted:pii] or call [redacted:pii], key [redacted:secret].');
    // The AWS rule's own range stops short of the key's end; the finding runs to it, so nothing of the key is left.
    const assignment = 'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9xK2mT4aQ" # prod';
    expect(redacted(assignment, findSecrets(assignment))).toBe('[redacted:secret]" # prod');
    expect(
      redacted('abcdef', [
        { start: 1, end: 4, kind: 'pii', rule: 'x' },
        { start: 2, end: 5, kind: 'secret', rule: 'y' },
      ]),
    ).toBe('a[redacted:pii]f');
  });

  it("the secret rules are the pinned preset's, each with its keywords", () => {
    // An upgrade of the preset that adds or renames rules fails here until the keywords are read again.
    expect(SECRET_RULE_IDS).toEqual(
      rules.map((r) => r.meta.id).filter((id) => id !== '@secretlint/secretlint-rule-filter-comments'),
    );
    expect(Object.keys(RULE_KEYWORDS).sort()).toEqual([...SECRET_RULE_IDS].sort());
  });

  it('the rules find the same with and without their keywords: on the corpus, on texts made of the keywords, as text and as JSON', () => {
    const keywords = Object.values(RULE_KEYWORDS).flatMap((k) => [...(k.keywords ?? []), ...(k.caseless ?? [])]);
    // Each keyword in its own cases and the others, followed by a token's tail, in prose, code and JSON.
    const tail = b62(130, 'tail');
    const soup = keywords.flatMap((k) => [k, k.toUpperCase(), k.toLowerCase()].map((v) => `x ${v}${tail} y`));
    const texts = [
      ...SECRETS.map((s) => s[0]),
      ...PII.map((p) => p[0]),
      ...NEAR_MISSES,
      ...soup,
      soup.join('\n'),
      JSON.stringify({ lines: soup }),
      `aws_secret_access_key=${b62(40, 'k1')}\nAWS_SECRET_ACCESS_KEY: "${b62(40, 'k2')}"\nSecretAccessKey => '${b62(40, 'k3')}'\naccount_id=123456789012`,
      `MONGODB+SRV://u1:Pw9xLm2q@h.example.net/db MySQLx://u2:Qz8yLm3r@db:3306/x jdbc:MYSQL://u3:Rz7wLm4s@db/x PostgreSQL://u4:Sz6vLm5t@db/x`,
      `HTTPS://HOOKS.SLACK.COM/services/T0A1B2C3D/B4E5F6G7H/abcdefghijklmnopqrstuvwx`,
      GCP_JSON,
      GCP_JSON.replace('"private_key_id"', '"private\\u005fkey_id"'),
    ];
    const ruleNames = new Set<string>();
    for (const text of texts)
      for (const json of [false, true]) {
        const ungated = findSecrets(text, json, false);
        for (const s of ungated) ruleNames.add(s.rule);
        expect(findSecrets(text, json), `${json ? 'JSON' : 'text'}: ${text.slice(0, 80)}`).toEqual(ungated);
      }
    // The texts exercise every rule: each finds something in them.
    const expected = [
      ...SECRETS.map((s) => s[1]),
      'gcp-service-account-key',
      'mysql-connection-string',
      'slack-webhook',
    ];
    expect([...ruleNames]).toEqual(expect.arrayContaining(expected));
  });

  it('a GCP service account key in JSON is found, its key name escaped or not', () => {
    expect(findSecrets(GCP_JSON, true).map((s) => s.rule)).toContain('gcp-service-account-key');
    expect(
      findSecrets(GCP_JSON.replace('"private_key_id"', '"private\\u005fkey_id"'), true).map((s) => s.rule),
    ).toContain('gcp-service-account-key');
  });

  it('a text of many phone-shaped decoys still finds the number among them (the checks past the budget count by shape)', () => {
    const decoys = Array.from({ length: PHONE_CHECKS_PER_TEXT + 10 }, (_, i) => `(212) 555-${String(1000 + i)}`).join(
      ', ',
    );
    const spans = findPii(`${decoys}, real (415) 555-2671`, ['US']);
    expect(spans.filter((s) => s.rule === 'phone').length).toBeGreaterThanOrEqual(PHONE_CHECKS_PER_TEXT + 1);
    expect(spans.some((s) => s.rule === 'phone' && s.start === decoys.length + 7)).toBe(true);
  });
});

describe('the reader copies a result only to redact it', () => {
  const reader = (mode: 'label' | 'redact') =>
    new OutputReader({ labels: [], server_labels: false, detect: { pii: mode, secrets: mode }, phone_regions: ['US'] });
  const upstream = () => ({
    content: [{ type: 'text', text: 'from ada@example.org' }],
    structuredContent: { note: 'call (415) 555-2671' },
  });

  it('relays the upstream object itself when nothing is redacted', () => {
    const result = upstream();
    expect(reader('label').read('tools/call', 'read', result).result).toBe(result);
    const clean = { content: [{ type: 'text', text: 'nothing to find' }] };
    expect(reader('redact').read('tools/call', 'read', clean).result).toBe(clean);
  });

  it('redacts a copy and leaves the upstream as it came', () => {
    const result = upstream();
    const outcome = reader('redact').read('tools/call', 'read', result);
    expect(outcome.result).toEqual({
      content: [{ type: 'text', text: 'from [redacted:pii]' }],
      structuredContent: { note: 'call [redacted:pii]' },
    });
    expect(result).toEqual(upstream());
  });
});
