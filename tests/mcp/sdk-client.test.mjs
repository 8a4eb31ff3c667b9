// build/sly-agent-q-mcp driven by a real MCP client: the official TypeScript
// SDK's Client over its StdioClientTransport, which spawns the binary.
//
//   SLY_AGENT_Q_MCP=build/sly-agent-q-mcp node --test tests/mcp/sdk-client.test.mjs
//
// (tests/mcp/run-sdk-client.sh installs the SDK first and ends with a
// summary line; ctest runs it as mcp_sdk_client.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EmptyResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { recordMessages } from './record-messages.mjs';
import { worldTouchingForms } from './world-forms.mjs';
import { textOf, holdError } from './results.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const binary = process.env.SLY_AGENT_Q_MCP ?? path.join(here, '../../build/sly-agent-q-mcp');

// The tools headless mode has: every tool of the Lisp side.  The tools
// defined in Emacs are not there.
const BUILT_INS = [
  'apropos_search', 'backtrace', 'check_syntax', 'class_hierarchy', 'class_slots', 'compile_form', 'describe_symbol', 'describe_system', 'eval_form',
  'eval_in_frame', 'evaluate_lisp', 'function_arglist', 'get_last_error', 'get_repl_history', 'inspect_object', 'invoke_restart', 'list_definitions',
  'list_package_symbols', 'list_systems', 'load_system', 'macroexpand_form', 'profile_form', 'reset_session', 'run_tests', 'who_calls', 'who_references',
];
const EMACS_ONLY = ['read_file', 'read_buffer', 'search_in_buffer', 'write_file', 'propose_file_edit', 'edit_form', 'insert_form', 'list_directory', 'search_files', 'find_definitions', 'get_diagnostics'];

let client;
let transport;
const received = [];  // every message the server sent
const sent = [];      // every message the client sent
const clientErrors = [];

async function connect(args = []) {
  const t = new StdioClientTransport({ command: binary, args, stderr: 'inherit' });  // the server's log, if any
  recordMessages(t, sent, received);
  const c = new Client({ name: 'sly-agent-q-sdk-test', version: '1.0.0' });
  c.onerror = (error) => clientErrors.push(error);
  await c.connect(t);
  return [c, t];
}

async function evaluate(code, options) {
  return client.callTool({ name: 'evaluate_lisp', arguments: { code } }, undefined, options);
}

before(async () => {
  [client, transport] = await connect();
});

after(async () => {
  await client?.close();
});

test('initialize: the newest protocol version the server supports, serverInfo, tools capability', async () => {
  const answer = received.find((m) => m.result?.protocolVersion);
  assert.ok(answer, 'an initialize result');
  // This SDK asks for its newest, 2025-11-25, the server's newest too.
  assert.equal(answer.result.protocolVersion, '2025-11-25');
  assert.match(client.getInstructions(), /evaluate_lisp/);
  const info = client.getServerVersion();
  assert.equal(info.name, 'sly-agent-q');
  assert.match(info.version, /^\d+\.\d+\.\d+$/);
  assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
});

test('initialize: a supported version the client asks for is the one answered', async () => {
  for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07']) {
    const { InitializeResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const result = await client.request({
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'again', version: '1' } },
    }, InitializeResultSchema);
    assert.equal(result.protocolVersion, version);
  }
});

test('ping', async () => {
  assert.deepEqual(await client.ping(), {});
});

test('listTools: every built-in, valid input schemas, annotations from the safety level', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of BUILT_INS) assert.ok(names.includes(name), `${name} is listed`);
  for (const name of EMACS_ONLY) assert.ok(!names.includes(name), `${name} needs Emacs`);
  const ajv = new Ajv({ strict: false });
  for (const tool of tools) {
    assert.equal(typeof tool.description, 'string');
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.ok(ajv.validateSchema(tool.inputSchema), `${tool.name}: ${ajv.errorsText(ajv.errors)}`);
    ajv.compile(tool.inputSchema);  // throws for a schema it cannot use
    assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean', tool.name);
    assert.equal(typeof tool.annotations?.destructiveHint, 'boolean', tool.name);
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(byName.describe_symbol.annotations, { readOnlyHint: true, destructiveHint: false });
  // evaluate_lisp runs code: it may change or delete anything the session holds.
  assert.deepEqual(byName.evaluate_lisp.annotations, { readOnlyHint: false, destructiveHint: true });
  assert.deepEqual(byName.evaluate_lisp.inputSchema.required, ['code']);
});

test('evaluate_lisp: a value', async () => {
  const result = await evaluate('(+ 1 2)');
  assert.equal(result.isError, false);
  assert.equal(textOf(result), '=> 3');
});

test('evaluate_lisp: output and a value', async () => {
  const result = await evaluate('(progn (format t "hello~%") 42)');
  assert.equal(textOf(result), '[stdout]\nhello\n\n=> 42');
});

test('evaluate_lisp: multiple values', async () => {
  assert.equal(textOf(await evaluate('(values 1 :two "three")')), '=> 1\n=> :TWO\n=> "three"');
});

test('evaluate_lisp: an error comes back as its [ERROR] type', async () => {
  const result = await evaluate('(error "boom ~A" 7)');
  assert.equal(result.isError, true);
  assert.match(textOf(result), /^\[ERROR\] SIMPLE-ERROR\nboom 7\n/);
  const undefinedFunction = await evaluate('(no-such-function-here 1)');
  assert.equal(undefinedFunction.isError, true);
  assert.match(textOf(undefinedFunction), /^\[ERROR\] UNDEFINED-FUNCTION/);
});

test('evaluate_lisp: the session persists between calls', async () => {
  assert.equal(textOf(await evaluate('(defun sdk-square (x) (* x x))')), '=> SDK-SQUARE');
  assert.equal(textOf(await evaluate('(sdk-square 12)')), '=> 144');
});

test('evaluate_lisp: exiting is intercepted and the server goes on', async () => {
  const result = await evaluate('(ext:quit 1)');
  assert.equal(result.isError, true);
  assert.match(textOf(result), /EXIT-INTERCEPTED/);
  assert.equal(textOf(await evaluate('(+ 2 2)')), '=> 4');
});

test("evaluate_lisp: an agent's code that touches the world is denied headless, naming --allow-dangerous", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentq-sdk-headless-'));
  const target = path.join(dir, 'keep.txt');
  fs.writeFileSync(target, 'kept');
  for (const code of worldTouchingForms(target)) {
    const result = await evaluate(code);
    assert.equal(result.isError, true, textOf(result));
    assert.match(textOf(result), /--allow-dangerous/);
  }
  assert.equal(fs.readFileSync(target, 'utf8'), 'kept');
  assert.equal(textOf(await evaluate('(mapcar (function 1+) (list 1 2 3))')), '=> (2 3 4)');
});

test('evaluate_lisp with debug holds an error; invoke_restart goes on from it, the worker serving meanwhile', async () => {
  const id = await holdError(client);
  // Headless, an agent's values that only compute ask nothing.
  const resumed = await client.callTool({ name: 'invoke_restart', arguments: { condition_id: id, restart: 'USE-IT', values: '42' } });
  assert.equal(resumed.isError, false, textOf(resumed));
  assert.equal(textOf(resumed), '=> (:GOT 42)');
  const gone = await client.callTool({ name: 'invoke_restart', arguments: { condition_id: id, restart: '0' } });
  assert.equal(gone.isError, true);
  assert.match(textOf(gone), new RegExp(`No error is held as condition ${id}`));
});

test('the hyphenated name is accepted', async () => {
  const result = await client.callTool({ name: 'evaluate-lisp', arguments: { code: '(* 6 7)' } });
  assert.equal(textOf(result), '=> 42');
});

test('an unknown tool is JSON-RPC error -32602', async () => {
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (error) => {
    assert.ok(error instanceof McpError, String(error));
    assert.equal(error.code, ErrorCode.InvalidParams);
    assert.match(error.message, /Unknown tool: no_such_tool/);
    return true;
  });
});

test('invalid arguments are the tool\'s error, which the model sees (MCP 2025-11-25)', async () => {
  const missing = await client.callTool({ name: 'evaluate_lisp', arguments: {} });
  assert.equal(missing.isError, true);
  assert.equal(textOf(missing), 'Missing required argument: code');
  const bogus = await client.callTool({ name: 'get_last_error', arguments: { bogus: 1 } });
  assert.equal(bogus.isError, true);
  assert.equal(textOf(bogus), "Unknown argument 'bogus' for get_last_error (it takes no arguments)");
  const beyond = await client.callTool({ name: 'apropos_search', arguments: { pattern: 'car', limit: 100000 } });
  assert.equal(beyond.isError, true);
  assert.equal(textOf(beyond), "Invalid argument 'limit': at most 500, got 100000");
  // The older name of capture_time is still read.
  const timed = await client.callTool({ name: 'evaluate_lisp', arguments: { code: '(+ 1 2)', 'capture-time': true } });
  assert.match(textOf(timed), /^=> 3\n; Timing: /);
});

test('listTools: titles, closed input schemas, bounds and defaults, an output schema', async () => {
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const tool of tools) {
    assert.equal(typeof tool.title, 'string', tool.name);
    assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
  }
  assert.equal(byName.evaluate_lisp.title, 'Evaluate Lisp');
  assert.equal(byName.get_repl_history.title, 'Get REPL History');
  assert.deepEqual(byName.apropos_search.inputSchema.properties.limit,
    { type: 'integer', description: byName.apropos_search.inputSchema.properties.limit.description,
      minimum: 1, maximum: 500, default: 50 });
  assert.equal(byName.evaluate_lisp.inputSchema.properties.capture_time.default, false);
  assert.ok(!('capture-time' in byName.evaluate_lisp.inputSchema.properties));
  const ajv = new Ajv({ strict: false });
  assert.ok(ajv.validateSchema(byName.evaluate_lisp.outputSchema), ajv.errorsText(ajv.errors));
});

test('evaluate_lisp: structuredContent fits its outputSchema: values, output, the error and its restarts', async () => {
  const { tools } = await client.listTools();
  const schema = tools.find((t) => t.name === 'evaluate_lisp').outputSchema;
  const validate = new Ajv({ strict: false }).compile(schema);
  const fits = (result) => assert.ok(validate(result.structuredContent), new Ajv().errorsText(validate.errors));

  const values = await evaluate('(progn (format t "hi~%") (warn "careful") (values 1 "two" :three))');
  fits(values);
  assert.deepEqual(values.structuredContent.values, ['1', '"two"', ':THREE']);
  assert.equal(values.structuredContent.stdout, 'hi\n');
  assert.equal(values.structuredContent.warnings.length, 1);
  assert.match(values.structuredContent.warnings[0], /careful/);
  assert.equal(values.structuredContent.package, 'COMMON-LISP-USER');
  assert.equal(values.structuredContent.error, undefined);
  // Output that looks like the text's own sections stays where it was printed.
  const tricky = await evaluate('(progn (write-string (format nil "x~%~%[stderr]~%=> 9~%")) 5)');
  fits(tricky);
  assert.deepEqual(tricky.structuredContent.values, ['5']);
  assert.equal(tricky.structuredContent.stdout, 'x\n\n[stderr]\n=> 9\n');
  assert.equal(tricky.structuredContent.stderr, undefined);

  const failed = await evaluate('(error "boom ~A" 7)');
  fits(failed);
  assert.equal(failed.isError, true);
  assert.equal(failed.structuredContent.error.type, 'SIMPLE-ERROR');
  assert.equal(failed.structuredContent.error.message, 'boom 7');

  const held = await client.callTool({ name: 'evaluate_lisp',
    arguments: { code: '(restart-case (error "held boom") (use-it (v) :report "Use a value" v))', debug: true } });
  fits(held);
  const error = held.structuredContent.error;
  assert.equal(error.type, 'SIMPLE-ERROR');
  assert.match(error.message, /^held boom\nThe error is held /);
  assert.equal(typeof error.condition_id, 'number');
  assert.deepEqual(error.restarts[0], { index: 0, name: 'USE-IT', report: 'Use a value' });
  // The code's own restarts (ABORT, always there, is not listed).
  assert.equal(error.restarts.length, 1, JSON.stringify(error.restarts));
  const resumed = await client.callTool({ name: 'invoke_restart',
    arguments: { condition_id: error.condition_id, restart: 'USE-IT', values: '42' } });
  assert.equal(textOf(resumed), '=> 42');
});

test('a dangerous tool is denied headless, and said how to allow it', async () => {
  // No dangerous tool is built in headless (write_file is Emacs's): define
  // one in Lisp, which registers it where MCP sees it.
  const defined = await evaluate(`(agent-q:register-tool agent-q:*agent-q-registry*
     (agent-q:define-tool "sdk_dangerous" "A dangerous tool for the test." nil
       :safety-level :dangerous :handler (lambda (args) (declare (ignore args)) "it ran")))`);
  assert.equal(defined.isError, false, textOf(defined));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'sdk_dangerous');
  assert.deepEqual(tool.annotations, { readOnlyHint: false, destructiveHint: true });
  const result = await client.callTool({ name: 'sdk_dangerous', arguments: {} });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /run sly-agent-q-mcp with --allow-dangerous to allow it/);
});

test('with --allow-dangerous, the dangerous tool runs', async () => {
  const [other] = await connect(['--allow-dangerous']);
  try {
    await other.callTool({ name: 'evaluate_lisp', arguments: { code: `(agent-q:register-tool agent-q:*agent-q-registry*
       (agent-q:define-tool "sdk_dangerous" "A dangerous tool for the test." nil
         :safety-level :dangerous :handler (lambda (args) (declare (ignore args)) "it ran")))` } });
    const result = await other.callTool({ name: 'sdk_dangerous', arguments: {} });
    assert.equal(result.isError, false);
    assert.equal(textOf(result), 'it ran');
  } finally {
    await other.close();
  }
});

test('progress: a call with a progressToken gets the output as it is printed, and the result keeps it all', async () => {
  const seen = [];
  const started = Date.now();
  const result = await client.callTool({ name: 'evaluate_lisp',
    arguments: { code: '(progn (dotimes (i 3) (print i) (finish-output) (sleep 0.5)) :done)' } },
  undefined, { onprogress: (progress) => seen.push({ ...progress, at: Date.now() - started }) });
  assert.equal(textOf(result), '[stdout]\n\n0 \n1 \n2 \n\n=> :DONE');
  const printed = seen.map((p) => p.message).join('');
  assert.match(printed, /0 [\s\S]*1 [\s\S]*2 /, JSON.stringify(seen));
  // Received while the call ran, not all at its end: the first came before
  // the last one was printed (about 1 s later).
  assert.ok(seen.length >= 2, JSON.stringify(seen));
  assert.ok(seen[0].at < seen[seen.length - 1].at, JSON.stringify(seen));
  for (let i = 1; i < seen.length; ++i) assert.ok(seen[i].progress > seen[i - 1].progress);
  // A quiet call gets the time it has run instead.
  const quiet = [];
  await client.callTool({ name: 'evaluate_lisp', arguments: { code: '(progn (sleep 1.5) :slept)' } },
    undefined, { onprogress: (progress) => quiet.push(progress) });
  assert.ok(quiet.some((p) => /^running for 1 s$/.test(p.message)), JSON.stringify(quiet));
  // Without a token, none is sent.
  const before = received.filter((m) => m.method === 'notifications/progress').length;
  await evaluate('(progn (print 1) (finish-output) (sleep 0.2) :quiet)');
  assert.equal(received.filter((m) => m.method === 'notifications/progress').length, before);
});

test('resources and prompts: the session\'s definitions, a symbol\'s documentation, an error to explain', async () => {
  assert.ok(client.getServerCapabilities().resources, 'resources capability');
  assert.ok(client.getServerCapabilities().prompts, 'prompts capability');
  await evaluate('(defun sdk-resource-fn (x) "Adds one." (1+ x))');
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'lisp://session/definitions'));
  const definitions = await client.readResource({ uri: 'lisp://session/definitions' });
  assert.match(definitions.contents[0].text, /SDK-RESOURCE-FN \(X\)/);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'lisp://symbol/{package}/{name}'));
  const doc = await client.readResource({ uri: 'lisp://symbol/CL-USER/SDK-RESOURCE-FN' });
  assert.match(doc.contents[0].text, /Adds one\./);
  await assert.rejects(client.readResource({ uri: 'lisp://symbol/NO-SUCH-PACKAGE/X' }), (error) => {
    assert.equal(error.code, -32002);
    return true;
  });
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name), ['explain-error', 'explain-symbol', 'fix-failing-tests']);
  const explained = await client.getPrompt({ name: 'explain-symbol', arguments: { symbol: 'sdk-resource-fn' } });
  assert.equal(explained.messages[0].role, 'user');
  assert.match(explained.messages[0].content.text, /Adds one\./);
});

test('ping is answered while an evaluation runs', async () => {
  const slow = evaluate('(progn (sleep 1.5) :slept)');
  await new Promise((resolve) => setTimeout(resolve, 200));
  const start = Date.now();
  await client.ping();
  assert.ok(Date.now() - start < 500, `ping took ${Date.now() - start} ms`);
  assert.equal(textOf(await slow), '=> :SLEPT');
});

test('cancelling (loop) through an AbortSignal interrupts it, never answers it; the next call works', async () => {
  const controller = new AbortController();
  const looping = evaluate('(loop)', { signal: controller.signal, timeout: 60000 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  controller.abort('the test cancels it');
  await assert.rejects(looping);
  const request = sent.findLast((m) => m.method === 'tools/call' && m.params?.arguments?.code === '(loop)');
  const cancel = sent.findLast((m) => m.method === 'notifications/cancelled');
  assert.equal(cancel.params.requestId, request.id);
  // The (loop) was interrupted: the next call is served (its limit is 30 s,
  // and calls run one at a time).
  assert.equal(textOf(await evaluate('(+ 40 2)', { timeout: 10000 })), '=> 42');
  await new Promise((resolve) => setTimeout(resolve, 200));
  // The spec: a cancelled request gets no response.
  assert.equal(received.find((m) => m.id === request.id), undefined, 'the cancelled request was answered');
  // So the SDK saw no answer for an id it had forgotten.
  assert.deepEqual(clientErrors.map(String), []);
});

test('stdout carried only JSON-RPC messages, none for an unknown id', () => {
  // The transport parses every line; a line that is not JSON-RPC would
  // have reached onerror.
  assert.ok(received.length > 10);
  for (const message of received) assert.equal(message.jsonrpc, '2.0');
  // Not even an answer for an unknown id: a cancelled request gets none.
  assert.deepEqual(clientErrors.map(String), []);
});

test('logging: nothing before logging/setLevel; then the messages at that level or above, none below', async () => {
  assert.deepEqual(client.getServerCapabilities().logging, {});
  const t = new StdioClientTransport({ command: binary, stderr: 'inherit' });
  const mine = [];
  recordMessages(t, [], mine);
  const other = new Client({ name: 'sly-agent-q-sdk-logging', version: '1.0.0' });
  await other.connect(t);
  const messages = () => mine.filter((m) => m.method === 'notifications/message');
  const target = path.join(os.tmpdir(), `agentq-logging-${process.pid}`);
  const refused = async () => {
    const result = await other.callTool({ name: 'evaluate_lisp', arguments: { code: `(delete-file ${JSON.stringify(target)})` } });
    assert.equal(result.isError, true, textOf(result));
    assert.match(textOf(result), /nobody to approve it/);
  };
  try {
    // A real event (code that touches the world, refused headless) before
    // the client chose a level: no message.
    await refused();
    assert.equal(messages().length, 0, JSON.stringify(messages()));
    // Above the event's level (warning): still none.
    await other.setLoggingLevel('error');
    await refused();
    assert.equal(messages().length, 0, JSON.stringify(messages()));
    // At it: the message, before the call's answer.
    await other.setLoggingLevel('warning');
    await refused();
    const [message] = messages();
    assert.ok(message, 'a notifications/message');
    assert.equal(message.params.level, 'warning');
    assert.equal(message.params.logger, 'sly-agent-q');
    assert.match(message.params.data.message, /refused: nobody can approve it headless/);
    const call = mine.filter((m) => m.result?.content).at(-1);
    assert.equal(message.params.data.requestId, call.id);
    assert.ok(mine.indexOf(message) < mine.indexOf(call));
    // A level MCP does not name: invalid params, and the level stays.
    await assert.rejects(other.request({ method: 'logging/setLevel', params: { level: 'loud' } }, EmptyResultSchema), (error) => {
      assert.ok(error instanceof McpError, String(error));
      assert.equal(error.code, ErrorCode.InvalidParams);
      assert.match(error.message, /debug, info, notice, warning/);
      return true;
    });
    await refused();
    assert.equal(messages().length, 2);
  } finally {
    await other.close();
  }
});

test('lisp://session/systems: the loaded ASDF systems, read through the safe list_systems, which loads nothing', async () => {
  // A server of its own: a session where ASDF is not loaded yet.
  const t = new StdioClientTransport({ command: binary, stderr: 'inherit' });
  const mine = [];
  recordMessages(t, [], mine);
  const other = new Client({ name: 'sly-agent-q-sdk-systems', version: '1.0.0' });
  await other.connect(t);
  const read = async () => (await other.readResource({ uri: 'lisp://session/systems' })).contents[0];
  try {
    // Every message logged at debug is seen: a call waiting for approval, or
    // denied (headless, a dangerous one is), would say so.
    await other.setLoggingLevel('debug');
    const { resources } = await other.listResources();
    const listed = resources.find((r) => r.uri === 'lisp://session/systems');
    assert.ok(listed, JSON.stringify(resources));
    assert.equal(listed.name, 'systems');
    assert.equal(listed.mimeType, 'text/plain');
    const { tools } = await other.listTools();
    const tool = tools.find((x) => x.name === 'list_systems');
    assert.deepEqual(tool.annotations, { readOnlyHint: true, destructiveHint: false });
    assert.equal(tool.inputSchema.additionalProperties, false);
    assert.deepEqual(tool.inputSchema.properties.limit, { type: 'integer', minimum: 1, maximum: 1000, default: 100,
      description: tool.inputSchema.properties.limit.description });
    const validate = new Ajv({ strict: false }).compile(tool.outputSchema);
    const structured = async (args) => {
      const result = await other.callTool({ name: 'list_systems', arguments: args });
      assert.equal(result.isError, false, textOf(result));
      assert.ok(validate(result.structuredContent), new Ajv().errorsText(validate.errors));
      return result;
    };

    // No ASDF yet: the resource says so, and reading it did not load it.
    const before = await read();
    assert.equal(before.text, 'ASDF is not loaded in this session, so no ASDF system is loaded. '
      + 'list_systems does not load it; load_system does (then the system asked for).');
    assert.deepEqual((await structured({})).structuredContent, { asdf_loaded: false, total: 0, systems: [] });
    assert.equal(textOf(await other.callTool({ name: 'evaluate_lisp', arguments: { code: '(find-package "ASDF")' } })), '=> NIL');

    // load_system loads ASDF (uiop: came with it, nothing to compile).
    const loaded = await other.callTool({ name: 'load_system', arguments: { name: 'uiop' } });
    assert.match(textOf(loaded), /^Loading system: uiop\nLoaded: uiop \(version [\d.]+\)$/);
    const after = await read();
    const count = Number(after.text.match(/^(\d+) ASDF systems loaded \(ASDF [\d.]+\):\n/)?.[1]);
    assert.equal(after.text.split('\n').length, count + 1, after.text);
    // ECL's own ASDF: its systems have no .asd file.
    for (const name of ['asdf', 'uiop']) assert.match(after.text, new RegExp(`^- ${name} [\\d.]+ \\(no \\.asd file\\)$`, 'm'));
    const uiop = (await structured({ filter: 'UIOP' })).structuredContent;
    assert.equal(uiop.asdf_loaded, true);
    assert.equal(uiop.total, 1);
    assert.equal(uiop.filter, 'UIOP');
    assert.deepEqual(uiop.systems, [{ name: 'uiop', version: uiop.asdf_version }]);
    const one = await structured({ limit: 1 });
    assert.equal(one.structuredContent.total, count);
    assert.equal(one.structuredContent.systems.length, 1);
    assert.match(textOf(one), new RegExp(`^${count} ASDF systems loaded \\(ASDF [\\d.]+\\), showing the first 1:\\n- asdf `));

    // Wrong arguments: the tool's error, saying what is wrong.
    for (const [args, message] of [[{ limit: 0 }, "Invalid argument 'limit': at least 1, got 0"],
      [{ limit: 1001 }, "Invalid argument 'limit': at most 1000, got 1001"],
      [{ limit: 2.5 }, "Invalid argument 'limit': expected integer, got number"],
      [{ filter: 7 }, "Invalid argument 'filter': expected string, got integer"],
      [{ name: 'uiop' }, "Unknown argument 'name' for list_systems (it takes: filter, limit)"]]) {
      const result = await other.callTool({ name: 'list_systems', arguments: args });
      assert.equal(result.isError, true, JSON.stringify(args));
      assert.equal(textOf(result), message);
    }
    assert.deepEqual(mine.filter((m) => m.method === 'notifications/message'), []);
  } finally {
    await other.close();
  }
});

test('resources/list_changed: after a definition (one per call), not after a call that defines nothing; the definition is in the resource', async () => {
  assert.deepEqual(client.getServerCapabilities().resources, { subscribe: false, listChanged: true });
  const changes = () => received.filter((m) => m.method === 'notifications/resources/list_changed').length;
  const before = changes();
  await evaluate('(+ 1 2)');
  assert.equal(changes(), before, 'nothing defined, nothing sent');
  // Two definitions in one call: one notification, before the answer.
  const result = await evaluate('(defun sdk-listed-fn (x) (* x 2)) (defclass sdk-listed-class () ())');
  assert.equal(result.isError, false, textOf(result));
  assert.equal(changes(), before + 1);
  const notification = received.findLastIndex((m) => m.method === 'notifications/resources/list_changed');
  const answer = received.findLastIndex((m) => m.result?.content);
  assert.ok(notification < answer, 'the notification came before the answer');
  const definitions = await client.readResource({ uri: 'lisp://session/definitions' });
  assert.match(definitions.contents[0].text, /SDK-LISTED-FN \(X\)/);
  await client.callTool({ name: 'reset_session', arguments: {} });
  assert.equal(changes(), before + 2, 'reset_session changes them too');
  const empty = await client.readResource({ uri: 'lisp://session/definitions' });
  assert.doesNotMatch(empty.contents[0].text, /SDK-LISTED-FN/);
});

test('describe_symbol and list_definitions: structuredContent fits their outputSchema, beside the same text', async () => {
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const check = (name, result) => {
    const validate = new Ajv({ strict: false }).compile(byName[name].outputSchema);
    assert.equal(result.isError, false, textOf(result));
    assert.ok(validate(result.structuredContent), `${name}: ${new Ajv().errorsText(validate.errors)}`);
    return result.structuredContent;
  };
  await evaluate('(defgeneric sdk-shape-area (s) (:documentation "The area.")) (defvar *sdk-shape-count* 3) (defmacro sdk-with-shape ((s) &body body) `(let ((,s 1)) ,@body))');
  const generic = await client.callTool({ name: 'describe_symbol', arguments: { symbol: 'sdk-shape-area' } });
  const g = check('describe_symbol', generic);
  assert.equal(g.symbol, 'COMMON-LISP-USER::SDK-SHAPE-AREA');
  assert.deepEqual(g.kinds, ['generic function']);
  assert.equal(g.lambda_list, '(s)');
  assert.equal(g.methods, 0);
  assert.equal(g.documentation.function, 'The area.');
  assert.match(textOf(generic), /^COMMON-LISP-USER::SDK-SHAPE-AREA is a generic function\.\nLambda list: \(s\)\nMethods: 0/);
  const mapcar = check('describe_symbol', await client.callTool({ name: 'describe_symbol', arguments: { symbol: 'mapcar' } }));
  assert.deepEqual(mapcar.kinds, ['function']);
  const nothing = check('describe_symbol', await client.callTool({ name: 'describe_symbol', arguments: { symbol: 'sdk-never-defined-xyz' } }).then(async (r) => {
    // Not found: a failure, no structure.
    assert.equal(r.isError, true);
    return client.callTool({ name: 'describe_symbol', arguments: { symbol: 'cl-user::*sdk-shape-count*' } });
  }));
  assert.deepEqual(nothing.kinds, ['variable']);
  assert.equal(nothing.value, '3');
  const listed = await client.callTool({ name: 'list_definitions', arguments: { package: 'cl-user' } });
  const l = check('list_definitions', listed);
  assert.equal(l.package, 'COMMON-LISP-USER');
  assert.ok(l.functions.some((f) => f.name === 'SDK-SHAPE-AREA' && f.lambda_list === '(S)'), JSON.stringify(l.functions));
  assert.ok(l.variables.some((v) => v.name === '*SDK-SHAPE-COUNT*' && v.value === '3'), JSON.stringify(l.variables));
  assert.ok(l.macros.some((m) => m.name === 'SDK-WITH-SHAPE'), JSON.stringify(l.macros));
  // The text says the same.
  assert.match(textOf(listed), /- \*SDK-SHAPE-COUNT\* = 3/);
  assert.match(textOf(listed), /\[Macros\]\n(- .*\n)*- SDK-WITH-SHAPE /);
});
