/**
 * `npm run bench:permits`: the cost of one permit token, signed as the decision
 * path signs it (libsodium Ed25519 over the compact JWS), with node:crypto's
 * OpenSSL on the same signing input, and with jose's SignJWT on the same claims,
 * in one run. Writes bench/permits/REPORT.md.
 */
import { sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importPKCS8, SignJWT } from 'jose';
import { packageRoot } from '../../compiler/index.js';
import { generateKeyMaterial } from '../../runtime/permits/key-material.js';
import { permitClaims, permitSigningInput, signPermit } from '../../runtime/permits/sign.js';
import type { KeyRing } from '../../runtime/permits/key-ring.js';
import { benchDecision } from './decision-row.js';

const material = generateKeyMaterial();
const ring = { signer: () => material } as unknown as KeyRing;
const decision = benchDecision;

async function time(label: string, n: number, run: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 500; i++) await run(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await run(i);
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / n;
  process.stderr.write(`${label}: ${us.toFixed(1)} µs per token\n`);
  return us;
}

const issuer = 'http://127.0.0.1:8080';
const ours = await time('libsodium', 5000, (i) => signPermit(permitClaims(decision(i), issuer), ring));
const node = await time('node:crypto', 5000, (i) => {
  const input = permitSigningInput(permitClaims(decision(i), issuer), material.kid);
  return `${input}.${sign(null, Buffer.from(input), material.privateKey).toString('base64url')}`;
});
const joseKey = await importPKCS8(material.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, 'EdDSA');
const jose = await time('jose SignJWT', 5000, (i) =>
  new SignJWT({ ...permitClaims(decision(i), issuer) })
    .setProtectedHeader({ alg: 'EdDSA', kid: material.kid, typ: 'permit+jwt' })
    .sign(joseKey),
);
const report = [
  '# Permit token signing',
  '',
  `Node ${process.version}; the same claims and key, 5000 tokens after 500 warm-up.`,
  '',
  '| signer | µs per token |',
  '| --- | ---: |',
  `| libsodium via sodium-native (the decision path) | ${ours.toFixed(1)} |`,
  `| node:crypto (OpenSSL), same token | ${node.toFixed(1)} |`,
  `| jose SignJWT | ${jose.toFixed(1)} |`,
  '',
].join('\n');
process.stdout.write(report);
writeFileSync(join(packageRoot(), 'bench', 'permits', 'REPORT.md'), report);
