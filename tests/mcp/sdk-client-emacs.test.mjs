// sly-agent-q-mcp --emacs SOCKET driven by the official TypeScript SDK's
// client, against a batch Emacs serving MCP (tests/mcp/serve-emacs.el:
// the real module, M-x sly-agent-q-mcp-server-start, a scripted approval).
//
//   SLY_AGENT_Q_MCP=build/sly-agent-q-mcp SLY_AGENT_Q_MODULE=build/sly-agent-q-module.so \
//     node --test tests/mcp/sdk-client-emacs.test.mjs
//
// (run-sdk-client.sh runs it for ctest as mcp_sdk_client_emacs.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv';
import { startServingEmacs } from './serving-emacs.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { recordMessages } from './record-messages.mjs';
import { worldTouchingForms } from './world-forms.mjs';
import { textOf, holdError } from './results.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../..');
const binary = process.env.SLY_AGENT_Q_MCP ?? path.join(root, 'build/sly-agent-q-mcp');

const EMACS_TOOLS = ['read_file', 'read_buffer', 'search_in_buffer', 'write_file', 'propose_file_edit', 'edit_form', 'insert_form', 'list_directory', 'search_files', 'find_definitions', 'get_diagnostics'];
// The 26 built-ins the Lisp side defines; with the 11 Emacs tools, the 37.
const LISP_TOOLS = [
  'apropos_search', 'backtrace', 'check_syntax', 'class_hierarchy', 'class_slots', 'compile_form', 'describe_symbol', 'describe_system', 'eval_form',
  'eval_in_frame', 'evaluate_lisp', 'function_arglist', 'get_last_error', 'get_repl_history', 'inspect_object', 'invoke_restart', 'list_definitions',
  'list_package_symbols', 'list_systems', 'load_system', 'macroexpand_form', 'profile_form', 'reset_session', 'run_tests', 'who_calls', 'who_references',
];

let dir;
let project;
let outside;
let socket;
let emacs;
let client;
const received = [];
const sent = [];
const clientErrors = [];

// A batch Emacs serving MCP on SOCKET; resolves once the socket is there.
function startEmacs() {
  // A killed Emacs leaves its socket behind (the new one replaces it).
  fs.rmSync(socket, { force: true });
  return startServingEmacs(socket, { AGENTQ_ALLOWED_DIR: project });
}

async function evaluate(code, options) {
  return client.callTool({ name: 'evaluate_lisp', arguments: { code } }, undefined, options);
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-emacs-'));
  fs.chmodSync(dir, 0o700);
  socket = path.join(dir, 'mcp.sock');
  // The project the file tools may see, and beside it a secret they may
  // not, with links to it from inside.
  project = fs.realpathSync(dir) + '/project';
  outside = fs.realpathSync(dir) + '/outside';
  fs.mkdirSync(path.join(project, 'src'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.lisp'), '(defun sdk-secret () "secret text")\n');
  fs.writeFileSync(path.join(project, 'src/shapes.lisp'),
    '(in-package :cl-user)\n\n(defun sdk-area (r)\n  (* pi r r))\n\n(defclass sdk-shape () ())\n');
  fs.writeFileSync(path.join(project, 'README.md'), 'The sdk-area of a circle.\n');
  fs.symlinkSync(outside, path.join(project, 'out-link'));
  fs.symlinkSync(path.join(outside, 'secret.lisp'), path.join(project, 'src/secret-link.lisp'));
  emacs = await startEmacs();
  const transport = new StdioClientTransport({
    command: binary, args: ['--emacs', socket, '--emacs-timeout', '10'], stderr: 'inherit',
  });
  recordMessages(transport, sent, received);
  client = new Client({ name: 'sly-agent-q-sdk-emacs-test', version: '1.0.0' });
  client.onerror = (error) => clientErrors.push(error);
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  if (emacs && emacs.exitCode === null) emacs.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('initialize: answered by the Emacs serving MCP', () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'sly-agent-q');
  assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
});

test('listTools: the Lisp tools, the Emacs tools and one defined in that Emacs', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.equal(new Set([...LISP_TOOLS, ...EMACS_TOOLS]).size, 37);
  for (const name of [...LISP_TOOLS, ...EMACS_TOOLS, 'sdk_emacs_dangerous']) {
    assert.ok(names.includes(name), `${name} is listed`);
  }
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.equal(typeof tool.annotations?.destructiveHint, 'boolean', tool.name);
  }
});

test('evaluate_lisp runs in the Emacs session, which persists', async () => {
  assert.equal(textOf(await evaluate('(+ 1 2)')), '=> 3');
  assert.equal(textOf(await evaluate('(defvar *sdk-emacs* 41)')), '=> *SDK-EMACS*');
  assert.equal(textOf(await evaluate('(1+ *sdk-emacs*)')), '=> 42');
});

test('resources and prompts through Emacs: a symbol defined in that session', async () => {
  await evaluate('(defun sdk-emacs-resource (x) "Triples." (* 3 x))');
  const doc = await client.readResource({ uri: 'lisp://symbol/CL-USER/SDK-EMACS-RESOURCE' });
  assert.match(doc.contents[0].text, /Triples\./);
  const prompt = await client.getPrompt({ name: 'explain-symbol', arguments: { symbol: 'sdk-emacs-resource' } });
  assert.match(prompt.messages[0].content.text, /Triples\./);
});

test('lisp://session/systems through Emacs: the systems loaded in that session, read without asking', async () => {
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'lisp://session/systems'), JSON.stringify(resources));
  // That Emacs's approval function says no to every question asked here:
  // a read that asked would fail.
  const loaded = await client.callTool({ name: 'load_system', arguments: { name: 'uiop' } });
  assert.equal(loaded.isError, false, textOf(loaded));
  const { contents } = await client.readResource({ uri: 'lisp://session/systems' });
  assert.equal(contents[0].uri, 'lisp://session/systems');
  assert.match(contents[0].text, /^\d+ ASDF systems loaded \(ASDF [\d.]+\):\n/);
  assert.match(contents[0].text, /^- uiop [\d.]+ \(no \.asd file\)$/m);
  const filtered = await client.callTool({ name: 'list_systems', arguments: { filter: 'uiop' } });
  assert.equal(filtered.isError, false, textOf(filtered));
  assert.equal(filtered.structuredContent.total, 1);
  assert.equal(filtered.structuredContent.systems[0].name, 'uiop');
  const wrong = await client.callTool({ name: 'list_systems', arguments: { limit: 0 } });
  assert.equal(wrong.isError, true);
  assert.equal(textOf(wrong), "Invalid argument 'limit': at least 1, got 0");
});

test('evaluate_lisp through Emacs gives structuredContent too, values and error', async () => {
  // The SDK validates structuredContent against the outputSchema it listed.
  await client.listTools();
  const values = await evaluate('(progn (princ "out") (values 1 :two))');
  assert.deepEqual(values.structuredContent.values, ['1', ':TWO']);
  assert.equal(values.structuredContent.stdout, 'out');
  const failed = await evaluate('(restart-case (error "emacs boom") (use-it (v) :report "Use it" v))');
  assert.equal(failed.isError, true);
  assert.equal(failed.structuredContent.error.type, 'SIMPLE-ERROR');
  assert.deepEqual(failed.structuredContent.error.restarts, [{ index: 0, name: 'USE-IT', report: 'Use it' }]);
});

test('read_buffer reads a buffer of that Emacs', async () => {
  const result = await client.callTool({ name: 'read_buffer', arguments: { buffer: 'agentq-sdk-buffer' } });
  assert.equal(result.isError, false, textOf(result));
  assert.match(textOf(result), /only this Emacs has this text/);
});

// The project tools: safe (the approval function would deny them and
// record the question), confined to AGENTQ_ALLOWED_DIR.
function assertConfined(result) {
  assert.equal(result.isError, true, textOf(result));
  assert.match(textOf(result), /^Access denied: .* outside the allowed directories/);
  assert.doesNotMatch(textOf(result), /secret text/);
}

test('list_directory lists the project in Emacs, and nothing outside it', async () => {
  const listed = await client.callTool({ name: 'list_directory', arguments: { depth: 2 } });
  assert.equal(listed.isError, false, textOf(listed));
  assert.equal(textOf(listed), [
    '. (5 entries, depth 2):',
    'README.md  26',
    'out-link@ (symbolic link to a place outside the allowed directories; not followed)',
    'src/',
    'src/secret-link.lisp@ (symbolic link to a place outside the allowed directories; not followed)',
    'src/shapes.lisp  85',
  ].join('\n'));
  for (const p of ['out-link', '..', outside, '/etc', `${project}/src/../../outside`]) {
    assertConfined(await client.callTool({ name: 'list_directory', arguments: { path: p } }));
  }
});

test('search_files finds lines in the project in Emacs, never through a link out', async () => {
  const found = await client.callTool({ name: 'search_files', arguments: { regexp: 'sdk-\\(area\\|secret\\)' } });
  assert.equal(found.isError, false, textOf(found));
  assert.equal(textOf(found), [
    "2 lines match 'sdk-\\(area\\|secret\\)' in . (2 files searched):",
    'README.md:1: The sdk-area of a circle.',
    'src/shapes.lisp:3: (defun sdk-area (r)',
  ].join('\n'));
  for (const p of ['out-link', 'src/secret-link.lisp', '..', outside, '/etc']) {
    assertConfined(await client.callTool({ name: 'search_files', arguments: { regexp: 'secret', path: p } }));
  }
  const bad = await client.callTool({ name: 'search_files', arguments: { regexp: '\\(' } });
  assert.equal(bad.isError, true);
  assert.match(textOf(bad), /^Invalid regular expression/);
});

test('find_definitions finds a definition in the project in Emacs, never one through a link out', async () => {
  const found = await client.callTool({ name: 'find_definitions', arguments: { name: 'SDK-AREA' } });
  assert.equal(found.isError, false, textOf(found));
  assert.equal(textOf(found), '1 definition of SDK-AREA (1 Lisp file read):\nsrc/shapes.lisp:3: defun: (defun sdk-area (r)');
  const secret = await client.callTool({ name: 'find_definitions', arguments: { name: 'sdk-secret' } });
  assert.equal(secret.isError, false, textOf(secret));
  assert.match(textOf(secret), /^No top-level definition of sdk-secret /);
});

test('get_diagnostics reads what a buffer of that Emacs shows, confined', async () => {
  const plain = await client.callTool({ name: 'get_diagnostics', arguments: { buffer: 'agentq-sdk-buffer' } });
  assert.equal(plain.isError, false, textOf(plain));
  assert.equal(textOf(plain), [
    'Diagnostics of buffer agentq-sdk-buffer, which has unsaved changes:',
    'Compiler notes: none (not compiled in Emacs since it was opened: C-c C-k compiles the file, C-c C-c one form).',
    'Flymake: off in this buffer.',
  ].join('\n'));
  const closed = await client.callTool({ name: 'get_diagnostics', arguments: { path: 'src/shapes.lisp' } });
  assert.equal(closed.isError, true);
  assert.match(textOf(closed), /^No buffer visits .*src\/shapes\.lisp, so there are no diagnostics for it/);
  for (const p of ['src/secret-link.lisp', 'out-link/secret.lisp', `${outside}/secret.lisp`]) {
    assertConfined(await client.callTool({ name: 'get_diagnostics', arguments: { path: p } }));
  }
});

test('a dangerous tool approved in Emacs runs, asked as from MCP', async () => {
  const result = await client.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'approve-me' } });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(textOf(result), 'ran in Emacs for approve-me, asked as MCP');
});

test('a dangerous tool denied in Emacs fails with the reason', async () => {
  const result = await client.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'deny-me' } });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /the test's approval function says no/);
});

test("an agent's code that writes a file asks in Emacs; denied, nothing is written", async () => {
  const target = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-code-')), 'written.txt');
  const code = `(with-open-file (s ${JSON.stringify(target)} :direction :output) (write-line "x" s))`;
  const result = await evaluate(code);
  assert.equal(result.isError, true, textOf(result));
  assert.match(textOf(result), /denied running this code/);
  assert.match(textOf(result), /opens a file for output/);
  assert.match(textOf(result), /the test's approval function says no/);
  assert.equal(fs.existsSync(target), false);
  // The forms, each denied in Emacs with nothing done.
  const keep = path.join(path.dirname(target), 'keep.txt');
  fs.writeFileSync(keep, 'kept');
  for (const form of worldTouchingForms(keep)) {
    const denied = await evaluate(form);
    assert.equal(denied.isError, true, form + ': ' + textOf(denied));
    assert.match(textOf(denied), /the test's approval function says no/);
  }
  assert.equal(fs.readFileSync(keep, 'utf8'), 'kept');
  // Reading and defining ask nothing.
  assert.equal(textOf(await evaluate('(defun sdk-twice (x) (* 2 x))')), '=> SDK-TWICE');
  assert.equal(textOf(await evaluate('(sdk-twice 21)')), '=> 42');
});

test('evaluate_lisp with debug holds an error in Emacs; invoke_restart goes on from it, Emacs serving meanwhile, its approvals asked', async () => {
  const id = await holdError(client);
  // Values that touch the world are an agent's code: asked in Emacs, as
  // from MCP; denied, nothing runs and the error stays held.
  const target = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-held-')), 'written.txt');
  const denied = await client.callTool({ name: 'invoke_restart', arguments: {
    condition_id: id, restart: 'USE-IT',
    values: `(with-open-file (s ${JSON.stringify(target)} :direction :output) (write-line "x" s))` } });
  assert.equal(denied.isError, true, textOf(denied));
  assert.match(textOf(denied), /the test's approval function says no/);
  assert.equal(fs.existsSync(target), false);
  const deniedInFrame = await client.callTool({ name: 'eval_in_frame', arguments: {
    condition_id: id, frame: 0, code: `(with-open-file (s ${JSON.stringify(target)} :direction :output) (write-line "x" s))` } });
  assert.match(textOf(deniedInFrame), /the test's approval function says no/);
  assert.equal(fs.existsSync(target), false);
  // Values that only compute ask nothing.
  const resumed = await client.callTool({ name: 'invoke_restart', arguments: { condition_id: id, restart: 'USE-IT', values: '42' } });
  assert.equal(resumed.isError, false, textOf(resumed));
  assert.equal(textOf(resumed), '=> (:GOT 42)');
  const gone = await client.callTool({ name: 'invoke_restart', arguments: { condition_id: id, restart: '0' } });
  assert.equal(gone.isError, true);
  assert.match(textOf(gone), new RegExp(`No error is held as condition ${id} \\(The agent chose the restart USE-IT with 42\\.\\)`));
});

test('edit_form and insert_form change a Lisp file in that Emacs by structure, and its session', async () => {
  const file = path.join(project, 'approve-me.lisp');
  fs.writeFileSync(file, '(defun sdk-form-a () 1)\n\n(defun sdk-form-b (x)\n  (- x))\n');
  // Not found: the candidates, before anyone is asked.
  const missing = await client.callTool({ name: 'edit_form',
    arguments: { path: file, kind: 'defun', name: 'sdk-form-c', new_source: '(defun sdk-form-c () 3)' } });
  assert.equal(missing.isError, true);
  assert.match(textOf(missing), /No top-level \(defun sdk-form-c\) in .*\n {2}line 1: \(defun sdk-form-a\)\n {2}line 3: \(defun sdk-form-b\)/);
  // Approved in Emacs: applied, and defined in the session.
  const edited = await client.callTool({ name: 'edit_form',
    arguments: { path: file, kind: 'defun', name: 'sdk-form-b', new_source: '(defun sdk-form-b (x)\n  (* 2 x))' } });
  assert.equal(edited.isError, false, textOf(edited));
  assert.match(textOf(edited), /^accepted\nThe edit is applied to .*approve-me\.lisp/);
  const inserted = await client.callTool({ name: 'insert_form',
    arguments: { path: file, after: 'defun sdk-form-a', new_source: '(defun sdk-form-a2 () (sdk-form-b 21))' } });
  assert.equal(inserted.isError, false, textOf(inserted));
  assert.equal(fs.readFileSync(file, 'utf8'),
    '(defun sdk-form-a () 1)\n\n(defun sdk-form-a2 () (sdk-form-b 21))\n\n(defun sdk-form-b (x)\n  (* 2 x))\n');
  assert.equal(textOf(await evaluate('(sdk-form-a2)')), '=> 42');
  // Another file: the approval denies, nothing changes.
  const other = path.join(project, 'deny-me.lisp');
  fs.writeFileSync(other, '(defun sdk-form-d () 4)\n');
  const denied = await client.callTool({ name: 'edit_form',
    arguments: { path: other, kind: 'defun', name: 'sdk-form-d', new_source: '(defun sdk-form-d () 5)' } });
  assert.equal(denied.isError, true);
  assert.equal(fs.readFileSync(other, 'utf8'), '(defun sdk-form-d () 4)\n');
});

test('cancelling (loop) through an AbortSignal interrupts it in Emacs, never answers it', async () => {
  const controller = new AbortController();
  const looping = evaluate('(loop)', { signal: controller.signal, timeout: 60000 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  controller.abort('the test cancels it');
  await assert.rejects(looping);
  const request = sent.findLast((m) => m.method === 'tools/call' && m.params?.arguments?.code === '(loop)');
  // Interrupted: the next call is served (calls run one at a time).
  assert.equal(textOf(await evaluate('(+ 40 2)', { timeout: 10000 })), '=> 42');
  await new Promise((resolve) => setTimeout(resolve, 200));
  // The spec: a cancelled request gets no response.
  assert.equal(received.find((m) => m.id === request.id), undefined, 'the cancelled request was answered');
});

test('cancelling a queued call through an AbortSignal drops it in Emacs: never answered', async () => {
  const first = evaluate('(progn (sleep 1) :first)');
  await new Promise((resolve) => setTimeout(resolve, 200));
  const controller = new AbortController();
  const queued = evaluate('(defparameter *sdk-dropped* :ran)', { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 100));
  controller.abort('the test cancels it');
  await assert.rejects(queued);
  assert.equal(textOf(await first), '=> :FIRST');
  const request = sent.findLast((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes('*sdk-dropped*'));
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(received.find((m) => m.id === request.id), undefined, 'the dropped call was answered');
  assert.equal(textOf(await evaluate("(boundp '*sdk-dropped*)")), '=> NIL');
});

test('Emacs killed: a clear error, and the binary still answers ping', async () => {
  const exited = new Promise((resolve) => emacs.on('exit', resolve));
  emacs.kill('SIGKILL');
  await exited;
  await assert.rejects(evaluate('(+ 1 2)'), (error) => {
    assert.ok(error instanceof McpError, String(error));
    assert.equal(error.code, -32000);
    assert.match(error.message, /Emacs is not serving MCP at .*mcp\.sock/);
    assert.match(error.message, /M-x sly-agent-q-mcp-server-start/);
    return true;
  });
  assert.deepEqual(await client.ping(), {});
});

test('Emacs started again: the next call reaches it', async () => {
  emacs = await startEmacs();
  assert.equal(textOf(await evaluate('(* 6 7)')), '=> 42');
});

test('stdout carried only JSON-RPC messages, none for an unknown id', () => {
  for (const message of received) assert.equal(message.jsonrpc, '2.0');
  // Not even an answer for an unknown id: a cancelled request gets none.
  assert.deepEqual(clientErrors.map(String), []);
});

test('no Emacs listening: the client connects, and every call says how to start Emacs serving', async () => {
  const nowhere = path.join(dir, 'nobody-here.sock');
  const other = new Client({ name: 'sly-agent-q-sdk-emacs-absent', version: '1.0.0' });
  await other.connect(new StdioClientTransport({ command: binary, args: ['--emacs', nowhere], stderr: 'ignore' }));
  try {
    assert.equal(other.getServerVersion().name, 'sly-agent-q');
    assert.deepEqual(await other.ping(), {});
    for (const attempt of [() => other.listTools(), () => other.callTool({ name: 'evaluate_lisp', arguments: { code: '1' } })]) {
      await assert.rejects(attempt(), (error) => {
        assert.equal(error.code, -32000);
        assert.ok(error.message.includes(`Emacs is not serving MCP at ${nowhere}`), error.message);
        assert.match(error.message, /M-x sly-agent-q-mcp-server-start/);
        return true;
      });
    }
  } finally {
    await other.close();
  }
});

test('logging through --emacs: a call waiting for approval (info) and denied (notice), at or above the chosen level only', async () => {
  assert.deepEqual(client.getServerCapabilities().logging, {});
  const transport = new StdioClientTransport({
    command: binary, args: ['--emacs', socket, '--emacs-timeout', '10'], stderr: 'inherit',
  });
  const mine = [];
  recordMessages(transport, [], mine);
  const other = new Client({ name: 'sly-agent-q-sdk-emacs-logging', version: '1.0.0' });
  await other.connect(transport);
  const messages = () => mine.filter((m) => m.method === 'notifications/message');
  const denied = async () => {
    const result = await other.callTool({ name: 'sdk_emacs_dangerous', arguments: { path: 'deny-me' } });
    assert.equal(result.isError, true, textOf(result));
    assert.match(textOf(result), /the test's approval function says no/);
    return mine.filter((m) => m.result?.content).at(-1);
  };
  try {
    await denied();
    assert.equal(messages().length, 0, 'nothing before the client chose a level');
    await other.setLoggingLevel('notice');
    const call = await denied();
    assert.deepEqual(messages().map((m) => m.params.level), ['notice'], JSON.stringify(messages()));
    const [notice] = messages();
    assert.equal(notice.params.logger, 'sly-agent-q');
    assert.equal(notice.params.data.requestId, call.id);
    assert.equal(notice.params.data.tool, 'sdk_emacs_dangerous');
    assert.match(notice.params.data.message, /sdk_emacs_dangerous was denied: .*the test's approval function says no/);
    assert.ok(mine.indexOf(notice) < mine.indexOf(call));
    await other.setLoggingLevel('info');
    const next = await denied();
    const after = messages().slice(1);
    assert.deepEqual(after.map((m) => m.params.level), ['info', 'notice'], JSON.stringify(after));
    assert.match(after[0].params.data.message, /sdk_emacs_dangerous waits for the person's approval in Emacs/);
    assert.equal(after[0].params.data.requestId, next.id);
    await assert.rejects(other.setLoggingLevel('loud'), (error) => {
      assert.ok(error instanceof McpError, String(error));
      assert.equal(error.code, -32602);
      return true;
    });
  } finally {
    await other.close();
  }
});

test('resources/list_changed through --emacs: after a definition, before the answer; the definition is in the resource', async () => {
  assert.deepEqual(client.getServerCapabilities().resources, { subscribe: false, listChanged: true });
  const changes = () => received.filter((m) => m.method === 'notifications/resources/list_changed').length;
  const before = changes();
  await evaluate('(+ 1 2)');
  assert.equal(changes(), before);
  const result = await evaluate('(defun sdk-emacs-listed (y) (list y))');
  assert.equal(result.isError, false, textOf(result));
  assert.equal(changes(), before + 1);
  const definitions = await client.readResource({ uri: 'lisp://session/definitions' });
  assert.match(definitions.contents[0].text, /SDK-EMACS-LISTED \(Y\)/);
});

test('describe_symbol and list_definitions through Emacs: structuredContent that fits their outputSchema', async () => {
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  await evaluate('(defun sdk-emacs-described (a &optional b) "Described." (list a b))');
  for (const [name, args] of [['describe_symbol', { symbol: 'sdk-emacs-described' }], ['list_definitions', {}]]) {
    const result = await client.callTool({ name, arguments: args });
    assert.equal(result.isError, false, textOf(result));
    const validate = new Ajv({ strict: false }).compile(byName[name].outputSchema);
    assert.ok(validate(result.structuredContent), `${name}: ${new Ajv().errorsText(validate.errors)}`);
  }
  const described = await client.callTool({ name: 'describe_symbol', arguments: { symbol: 'sdk-emacs-described' } });
  assert.deepEqual(described.structuredContent.kinds, ['function']);
  assert.equal(described.structuredContent.lambda_list, '(a &optional b)');
  assert.equal(described.structuredContent.documentation.function, 'Described.');
});

test('progress through --emacs: the printed numbers arrive before the answer, the result keeps them all', async () => {
  const seen = [];
  let answered = false;
  const call = client.callTool({ name: 'evaluate_lisp',
    arguments: { code: '(progn (dotimes (i 3) (print i) (finish-output) (sleep 0.5)) :done)' } },
  undefined, { onprogress: (progress) => seen.push({ ...progress, answered }) });
  const result = await call.finally(() => { answered = true; });
  assert.equal(textOf(result), '[stdout]\n\n0 \n1 \n2 \n\n=> :DONE');
  const printed = seen.map((p) => p.message).join('');
  assert.match(printed, /0 [\s\S]*1 [\s\S]*2 /, JSON.stringify(seen));
  assert.ok(seen.every((p) => !p.answered), 'every notification came before the answer');
  // On the wire too: the progress lines precede the response.
  const answer = received.findLastIndex((m) => m.result?.content);
  const lastProgress = received.findLastIndex((m) => m.method === 'notifications/progress');
  assert.ok(lastProgress >= 0 && lastProgress < answer);
  for (let i = 1; i < seen.length; ++i) assert.ok(seen[i].progress > seen[i - 1].progress);
  // Without a token, none is sent.
  const before = received.filter((m) => m.method === 'notifications/progress').length;
  await evaluate('(progn (print 1) (finish-output) :quiet)');
  assert.equal(received.filter((m) => m.method === 'notifications/progress').length, before);
});
