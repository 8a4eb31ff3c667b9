// sly-agent-q-mcp --emacs SOCKET --http 0 driven by the TypeScript SDK's
// Streamable HTTP client, against a batch Emacs serving MCP
// (tests/mcp/serve-emacs.el, as sdk-client-emacs.test.mjs): each HTTP
// session is its own connection to that Emacs.
//
//   SLY_AGENT_Q_MCP=build/sly-agent-q-mcp SLY_AGENT_Q_MODULE=build/sly-agent-q-module.so \
//     node --test tests/mcp/sdk-client-emacs-http.test.mjs
//
// (run-sdk-client.sh runs it for ctest as mcp_sdk_client_emacs_http.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServingEmacs } from './serving-emacs.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { startHttpServer } from './http-server.mjs';
import { recordMessages } from './record-messages.mjs';
import { textOf } from './results.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../..');

let dir;
let socket;
let emacs;
let server;
let url;
let token;
const clients = [];

function startEmacs() {
  return startServingEmacs(socket, {});
}

async function connect(name, received) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  if (received) recordMessages(transport, [], received);
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-emacs-http-'));
  fs.chmodSync(dir, 0o700);
  socket = path.join(dir, 'mcp.sock');
  emacs = await startEmacs();
  const tokenFile = path.join(dir, 'token');
  ({ child: server, url } = await startHttpServer(['--emacs', socket, '--emacs-timeout', '10'], tokenFile));
  token = fs.readFileSync(tokenFile, 'utf8').trim();
});

after(async () => {
  for (const client of clients) await client.close().catch(() => {});
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.stdin.end();
    await exited;
  }
  if (emacs && emacs.exitCode === null) emacs.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('over HTTP, the tools run in Emacs: its buffers, its Lisp session', async () => {
  const client = await connect('emacs-http');
  const { tools } = await client.listTools();
  assert.ok(tools.some((tool) => tool.name === 'read_buffer'));
  const buffer = await client.callTool({ name: 'read_buffer', arguments: { buffer: 'agentq-sdk-buffer' } });
  assert.match(textOf(buffer), /only this Emacs has this text/);
  assert.equal(textOf(await client.callTool({ name: 'evaluate_lisp', arguments: { code: '(+ 1 2)' } })), '=> 3');
  // With a progress token: the SSE answer, through the bridge.
  const streamed = await client.callTool({ name: 'evaluate_lisp', arguments: { code: '(* 6 7)' } }, undefined, { onprogress: () => {} });
  assert.equal(textOf(streamed), '=> 42');
});

test('a dangerous call over HTTP is asked in Emacs, as MCP, approved or denied', async () => {
  const client = await connect('emacs-http-approvals');
  const approved = await client.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'approve-me' } });
  assert.equal(textOf(approved), 'ran in Emacs for approve-me, asked as MCP');
  const denied = await client.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'deny-me' } });
  assert.equal(denied.isError, true);
  assert.match(textOf(denied), /the test's approval function says no/);
});

test('two HTTP clients at once through Emacs: calls take turns; cancelling one leaves the other', async () => {
  const a = await connect('a');
  const b = await connect('b');
  const abort = new AbortController();
  const aCall = a.callTool({ name: 'evaluate_lisp', arguments: { code: '(loop (sleep 0.01))' } }, undefined,
    { signal: abort.signal, timeout: 600000 }).then((result) => `answered: ${JSON.stringify(result)}`, () => 'rejected');
  // Wait until A's loop runs: a quick call of B's then waits behind it
  // (Emacs runs the calls of every connection in turn, on one runner).
  for (;;) {
    const probe = await b.callTool({ name: 'evaluate_lisp', arguments: { code: '1' } }, undefined, { timeout: 2000 })
      .then(() => 'ran', () => 'waited');
    if (probe === 'waited') break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // What Emacs answers at once is answered to B meanwhile.
  const { tools } = await b.listTools();
  assert.ok(tools.some((tool) => tool.name === 'read_buffer'));
  let bDone = false;
  const bCall = b.callTool({ name: 'read_buffer', arguments: { buffer: 'agentq-sdk-buffer' } }, undefined, { timeout: 600000 })
    .finally(() => { bDone = true; });
  await b.ping();
  assert.equal(bDone, false);
  abort.abort('enough');
  assert.equal(await aCall, 'rejected');
  assert.match(textOf(await bCall), /only this Emacs has this text/);
});

test('logging over HTTP through Emacs: after logging/setLevel, a denied call\'s messages on its stream, none below the level', async () => {
  const mine = [];
  const client = await connect('emacs-http-logging', mine);
  assert.deepEqual(client.getServerCapabilities().logging, {});
  const messages = () => mine.filter((m) => m.method === 'notifications/message');
  const denied = async () => {
    const result = await client.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'deny-me' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /the test's approval function says no/);
    return mine.filter((m) => m.result?.content).at(-1);
  };
  await denied();
  assert.equal(messages().length, 0);
  await client.setLoggingLevel('notice');
  const call = await denied();
  assert.deepEqual(messages().map((m) => m.params.level), ['notice'], JSON.stringify(messages()));
  assert.equal(messages()[0].params.data.requestId, call.id);
  assert.match(messages()[0].params.data.message, /sdk_emacs_dangerous was denied/);
  assert.ok(mine.indexOf(messages()[0]) < mine.indexOf(call));
});
