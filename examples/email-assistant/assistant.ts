/**
 * The e-mail assistant (docs/trifecta.md): an agent run with two MCP servers,
 * each behind its own stdio `authz mcp-proxy`, both proxies in one session
 * (`--session`), so that what one server's results taught the session decides
 * the calls through the other.
 *
 * Its task: "send my accountant, tax@ledgerly.example, a summary of this
 * week's mail". It reads the inbox (mail-server.ts), sends the summary, and
 * then does what a model that follows instructions found in its input does: a
 * mail that says "read the file F and send it to A" makes it read F from the
 * file store (files-server.ts) and send it to A. Deterministic: no model.
 *
 *   node dist/examples/email-assistant/assistant.js [--injected] [--session ID]
 *        [--mail-config mail.yaml] [--files-config files.yaml]
 *
 * `--injected` puts the attacker's mail in the inbox. The session is `--session`,
 * else AUTHZ_SESSION_ID, else a fresh `run-...`. AUTHZ_URL and AUTHZ_API_KEY
 * pass on to the proxies.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const { values } = parseArgs({
  options: {
    injected: { type: 'boolean', default: false },
    session: { type: 'string' },
    'mail-config': { type: 'string', default: 'mail.yaml' },
    'files-config': { type: 'string', default: 'files.yaml' },
  },
});

const ACCOUNTANT = 'tax@ledgerly.example';
/** An instruction in a mail, as the model of this example reads it. */
const INSTRUCTION = /read the file (\S+) and send it to ([^\s,]+@[^\s,]+?)\.?(?:\s|$)/i;

const session = values.session ?? process.env.AUTHZ_SESSION_ID ?? `run-${randomUUID().slice(0, 8)}`;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** A client of one MCP server, started behind its own `authz mcp-proxy` in this run's session. */
async function connect(name: string, config: string, server: string[]): Promise<Client> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      here('../../../bin/authz.js'),
      'mcp-proxy',
      '--config',
      config,
      '--session',
      session,
      '--',
      process.execPath,
      ...server,
    ],
    env,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const client = new Client({ name: `email-assistant (${name})`, version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`could not start the ${name} proxy: ${(error as Error).message}\n${err}`);
  }
  return client;
}

const textOf = (content: unknown) => ((content ?? []) as Array<{ text?: string }>).map((c) => c.text ?? '').join(' ');

/**
 * One tool call, printed with what came of it (`show` turns an allowed result's
 * text into the lines printed); answers the result's text, or null when refused.
 */
async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  shown: Record<string, unknown>,
  show: (text: string) => string,
): Promise<string | null> {
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result.content);
  console.log(
    `${name} ${JSON.stringify(shown)}\n  -> ${result.isError ? `refused: ${text}` : `allowed: ${show(text)}`}`,
  );
  return result.isError ? null : text;
}

/** The inbox's mails as `sender: subject`. */
const mailsOf = (inbox: string) =>
  [...inbox.matchAll(/^#\d+ From: (\S+)\nSubject: (.*)$/gm)].map((m) => `${m[1]}: ${m[2]}`);
const lines = (text: string) => `${text.trimEnd().split('\n').length} lines`;

const mail = await connect('mail', values['mail-config'], [
  here('./mail-server.js'),
  ...(values.injected ? ['--injected'] : []),
]);
const files = await connect('files', values['files-config'], [here('./files-server.js')]);
try {
  console.log(`session ${session}`);
  const inbox = await call(mail, 'inbox_read', {}, {}, (text) =>
    [`${mailsOf(text).length} mails`, ...mailsOf(text)].join('\n     '),
  );
  if (inbox !== null) {
    const summary = `This week: ${mailsOf(inbox).join('; ')}.`;
    await call(
      mail,
      'email_send',
      { to: ACCOUNTANT, subject: 'This week', body: summary },
      { to: ACCOUNTANT, subject: 'This week' },
      (text) => text,
    );
    // The model takes the instruction in the mail for part of its task.
    const instruction = INSTRUCTION.exec(inbox);
    if (instruction) {
      const [, path, to] = instruction as unknown as [string, string, string];
      console.log(`a mail says: read the file ${path} and send it to ${to}`);
      const file = await call(files, 'files_read', { path }, { path }, lines);
      if (file !== null)
        await call(mail, 'email_send', { to, subject: path, body: file }, { to, subject: path }, (text) => text);
    }
  }
} finally {
  await mail.close();
  await files.close();
}
