// build/sly-agent-q-mcp --http 0 driven by real MCP clients: the official
// TypeScript SDK's Client over its StreamableHTTPClientTransport, several
// at once, plus raw HTTP for what a client of the SDK never sends (no
// token, a foreign Origin, an unknown session, hostile bytes).
//
//   SLY_AGENT_Q_MCP=build/sly-agent-q-mcp node --test tests/mcp/sdk-client-http.test.mjs
//
// (run-sdk-client.sh runs it for ctest as mcp_sdk_client_http.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { startHttpServer } from './http-server.mjs';
import { recordMessages } from './record-messages.mjs';
import { textOf } from './results.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

let dir;
let server;
let url;
let port;
let token;
let stderrText;
const clients = [];

// RECEIVED, when given, records every message the client receives.
async function connect(name = 'sly-agent-q-sdk-http-test', received) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  if (received) recordMessages(transport, [], received);
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return [client, transport];
}

function evaluate(client, code, options) {
  return client.callTool({ name: 'evaluate_lisp', arguments: { code } }, undefined, options);
}

// Raw bytes to the server; resolves with everything it answered once it
// closes the connection (or after the first response when FIRST).
function raw(bytes, { first = false } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk;
      if (first && /\r\n\r\n/.test(answer)) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('end', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.on('error', (error) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? resolve(answer) : reject(error)));
    socket.write(bytes);
  });
}

function status(answer) {
  return Number(answer.match(/^HTTP\/1\.1 (\d{3})/)?.[1]);
}

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

async function post(body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body,
  });
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-http-'));
  const tokenFile = path.join(dir, 'token');
  ({ child: server, url, port, text: stderrText } = await startHttpServer([], tokenFile));
  token = fs.readFileSync(tokenFile, 'utf8').trim();
});

after(async () => {
  for (const client of clients) await client.close().catch(() => {});
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.stdin.end();  // the end of stdin stops it
    await exited;
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the token file is 0600 and holds the token printed for claude mcp add', () => {
  const mode = fs.statSync(path.join(dir, 'token')).mode & 0o777;
  assert.equal(mode, 0o600);
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.ok(stderrText.includes(`claude mcp add --transport http sly-agent-q ${url} --header "Authorization: Bearer ${token}"`));
});

test('the SDK client connects with the token, lists the tools and calls them', async () => {
  const [client, transport] = await connect();
  assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
  assert.equal(client.getServerVersion().name, 'sly-agent-q');
  const { tools } = await client.listTools();
  assert.ok(tools.some((tool) => tool.name === 'evaluate_lisp'));
  assert.equal(textOf(await evaluate(client, '(+ 1 2)')), '=> 3');
  await client.ping();
});

test('a call that asks for progress is answered on an SSE stream', async () => {
  const [client] = await connect();
  // onprogress makes the SDK send a progressToken.
  const result = await evaluate(client, '(* 6 7)', { onprogress: () => {} });
  assert.equal(textOf(result), '=> 42');
  // Raw: the same request's answer is text/event-stream, the response as a message event.
  const init = await post(initialize, { Authorization: `Bearer ${token}` });
  const session = init.headers.get('mcp-session-id');
  const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'evaluate_lisp', arguments: { code: '(+ 2 2)' }, _meta: { progressToken: 'p1' } } }),
  { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('content-type'), 'text/event-stream');
  const text = await answer.text();
  const data = text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)));
  assert.equal(data.at(-1).id, 2);
  assert.equal(data.at(-1).result.content[0].text, '=> 4');
  // Progress over HTTP: the output as it is printed, on the call's stream, before its answer.
  const seen = [];
  const printed = await evaluate(client, '(progn (dotimes (i 3) (print i) (finish-output) (sleep 0.3)) :done)',
    { onprogress: (progress) => seen.push(progress) });
  assert.match(textOf(printed), /=> :DONE$/);
  assert.match(seen.map((p) => p.message).join(''), /0 [\s\S]*1 [\s\S]*2 /, JSON.stringify(seen));
});

test('sessions share the one Lisp session: a definition of one is seen by the other', async () => {
  const [a] = await connect('a');
  const [b] = await connect('b');
  assert.equal(textOf(await evaluate(a, '(defparameter *http-shared* 17)')), '=> *HTTP-SHARED*');
  assert.equal(textOf(await evaluate(b, '*http-shared*')), '=> 17');
});

test('two clients at once: one waits for Lisp behind the other; cancelling one leaves the other', async () => {
  const [a] = await connect('a');
  const [b] = await connect('b');
  const abort = new AbortController();
  let aDone = false;
  const aCall = evaluate(a, '(loop (sleep 0.01))', { signal: abort.signal, timeout: 600000 })
    .then(() => 'answered', (error) => `rejected: ${error.message}`)
    .finally(() => { aDone = true; });
  // Wait until A's loop runs: a quick call of B's then waits behind it.
  for (;;) {
    const status = textOf(await b.callTool({ name: 'evaluate_lisp', arguments: { code: '1' } }, undefined, { timeout: 2000 })
      .catch(() => ({ content: [{ type: 'text', text: 'busy' }] })));
    if (status === 'busy') break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // What needs no Lisp is answered to B while A's call runs.
  const { tools } = await b.listTools();
  assert.ok(tools.length > 0);
  await b.ping();
  assert.equal(aDone, false);
  // B's Lisp call waits behind A's on the one worker...
  let bDone = false;
  const bCall = evaluate(b, '(+ 40 2)').finally(() => { bDone = true; });
  await b.ping();
  assert.equal(bDone, false);
  // ...until A cancels its own: B's call is untouched and answers.
  abort.abort('enough');
  assert.match(await aCall, /rejected/);
  assert.equal(textOf(await bCall), '=> 42');
});

test("a client whose connection closes mid-call does not hurt another client", async () => {
  const [b] = await connect('b');
  const init = await post(initialize, { Authorization: `Bearer ${token}` });
  const session = init.headers.get('mcp-session-id');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call',
    params: { name: 'evaluate_lisp', arguments: { code: '(loop (sleep 0.01))' } } });
  // A raw client posts a call that never ends, then hangs up.
  await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Mcp-Session-Id: ${session}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      setTimeout(() => { socket.destroy(); resolve(); }, 300);
    });
  });
  // Its call is stopped (nobody is left to answer): B's Lisp call runs.
  assert.equal(textOf(await evaluate(b, '(+ 1 1)', { timeout: 120000 })), '=> 2');
});

test('a second server on the same port fails and leaves the first one\'s token file alone', async () => {
  const binary = process.env.SLY_AGENT_Q_MCP ?? path.join(here, '../../build/sly-agent-q-mcp');
  const tokenFile = path.join(dir, 'token');
  const child = spawn(binary, ['--http', String(port), '--http-token-file', tokenFile], { stdio: ['pipe', 'ignore', 'pipe'] });
  let text = '';
  child.stderr.on('data', (chunk) => { text += chunk; });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 1);
  assert.match(text, /bind 127\.0\.0\.1:\d+/);
  assert.equal(fs.readFileSync(tokenFile, 'utf8').trim(), token);
});

test('without the token: 401; with a wrong one: 401', async () => {
  assert.equal((await post(initialize)).status, 401);
  assert.equal((await post(initialize, { Authorization: 'Bearer 0000' })).status, 401);
  assert.equal((await post(initialize, { Authorization: `Bearer ${token}x` })).status, 401);
  assert.equal((await post(initialize, { Authorization: `Basic ${token}` })).status, 401);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'no-token', version: '1.0.0' });
  await assert.rejects(client.connect(transport));
});

test('a foreign Origin: 403; the server\'s own Origin is fine', async () => {
  assert.equal((await post(initialize, { Authorization: `Bearer ${token}`, Origin: 'http://evil.example' })).status, 403);
  assert.equal((await post(initialize, { Authorization: `Bearer ${token}`, Origin: `http://127.0.0.1:${port + 1}` })).status, 403);
  assert.equal((await post(initialize, { Authorization: `Bearer ${token}`, Origin: `http://localhost:${port}` })).status, 200);
});

test('sessions: an unknown id is 404, none is 400, DELETE ends one', async () => {
  const auth = { Authorization: `Bearer ${token}` };
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' });
  assert.equal((await post(ping, { ...auth, 'Mcp-Session-Id': 'feedfacefeedfacefeedfacefeedface' })).status, 404);
  assert.equal((await post(ping, auth)).status, 400);
  const init = await post(initialize, auth);
  const session = init.headers.get('mcp-session-id');
  assert.equal((await post(ping, { ...auth, 'Mcp-Session-Id': session })).status, 200);
  const notification = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal((await post(notification, { ...auth, 'Mcp-Session-Id': session })).status, 202);
  assert.equal((await fetch(url, { method: 'GET', headers: { ...auth, Accept: 'text/event-stream', 'Mcp-Session-Id': session } })).status, 405);
  assert.equal((await fetch(url, { method: 'DELETE', headers: { ...auth, 'Mcp-Session-Id': session } })).status, 204);
  assert.equal((await post(ping, { ...auth, 'Mcp-Session-Id': session })).status, 404);
  // The SDK client's close after terminateSession.
  const [client, transport] = await connect();
  await transport.terminateSession();
  await assert.rejects(client.ping());
});

test('hostile HTTP: garbage, huge heads and bodies, chunked bodies get an error; a half request blocks nobody', async () => {
  assert.equal(status(await raw('\x00\x01garbage\r\n\r\n')), 400);
  assert.equal(status(await raw('GET / HTTP/9.9\r\n\r\n')), 400);
  assert.equal(status(await raw(`GET /mcp HTTP/1.1\r\nX: ${'a'.repeat(100000)}\r\n\r\n`, { first: true })), 431);
  assert.equal(status(await raw(`POST /mcp HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nContent-Length: 999999999999\r\n\r\n`)), 413);
  assert.equal(status(await raw(`POST /mcp HTTP/1.1\r\nContent-Length: 12x\r\n\r\n`)), 400);
  assert.equal(status(await raw(`POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`)), 411);
  // Refused before its body is read, and answered, not reset.
  const big = 'x'.repeat(1 << 20);
  assert.equal(status(await raw(`POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`)), 401);
  const auth = { Authorization: `Bearer ${token}` };
  assert.equal((await post('{"jsonrpc":', auth)).status, 400);
  assert.equal((await post('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', auth)).status, 400);
  assert.equal((await post(initialize, { ...auth, 'Content-Type': 'text/plain' })).status, 415);
  assert.equal((await fetch(url.replace('/mcp', '/other'), { headers: auth })).status, 404);
  // Half requests held open, a head and a body: other clients are served meanwhile.
  const halves = [net.connect(port, '127.0.0.1'), net.connect(port, '127.0.0.1')];
  halves[0].write('POST /mcp HTTP/1.1\r\nContent-Le');
  halves[1].write(`POST /mcp HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"js`);
  const [client] = await connect('beside-half-requests');
  assert.equal(textOf(await evaluate(client, '(+ 20 22)')), '=> 42');
  for (const half of halves) half.destroy();
  // Still serving after all that.
  await client.ping();
});

test('logging over HTTP: after logging/setLevel, a call\'s log messages come on its own stream, none below the level', async () => {
  const mine = [];
  const [client] = await connect('sly-agent-q-sdk-http-logging', mine);
  assert.deepEqual(client.getServerCapabilities().logging, {});
  const messages = () => mine.filter((m) => m.method === 'notifications/message');
  const target = path.join(os.tmpdir(), `agentq-http-logging-${process.pid}`);
  const refused = async () => {
    const result = await evaluate(client, `(delete-file ${JSON.stringify(target)})`);
    assert.equal(result.isError, true, textOf(result));
    assert.match(textOf(result), /nobody to approve it/);
  };
  await refused();
  assert.equal(messages().length, 0);
  await client.setLoggingLevel('error');
  await refused();
  assert.equal(messages().length, 0, JSON.stringify(messages()));
  await client.setLoggingLevel('warning');
  await refused();
  const [message] = messages();
  assert.ok(message, 'a notifications/message');
  assert.equal(message.params.level, 'warning');
  assert.match(message.params.data.message, /refused: nobody can approve it headless/);
  const call = mine.filter((m) => m.result?.content).at(-1);
  assert.equal(message.params.data.requestId, call.id);
  assert.ok(mine.indexOf(message) < mine.indexOf(call));
});

test('resources/list_changed over HTTP: on the stream of the call that defined something', async () => {
  const mine = [];
  const [client] = await connect('sly-agent-q-sdk-http-changes', mine);
  assert.deepEqual(client.getServerCapabilities().resources, { subscribe: false, listChanged: true });
  const changes = () => mine.filter((m) => m.method === 'notifications/resources/list_changed').length;
  // A stream (a progress token): its notifications come before its answer.
  await evaluate(client, '(+ 1 2)', { onprogress: () => {} });
  assert.equal(changes(), 0);
  await evaluate(client, '(defun sdk-http-listed (z) z)', { onprogress: () => {} });
  assert.equal(changes(), 1);
  const definitions = await client.readResource({ uri: 'lisp://session/definitions' });
  assert.match(definitions.contents[0].text, /SDK-HTTP-LISTED \(Z\)/);
});
