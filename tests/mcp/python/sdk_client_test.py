"""sly-agent-q-mcp driven by the official MCP Python SDK (Debian's python3-mcp).

The same checks over each way a client reaches the server: headless over
stdio and over Streamable HTTP, and through a batch Emacs serving MCP
(tests/mcp/serve-emacs.el) over stdio and HTTP:

- the protocol version negotiated is 2025-11-25, the SDK's newest;
- structured results fit each tool's outputSchema (the SDK checks them
  itself, and so does this test, with jsonschema);
- a call with a progressToken gets the output as it is printed, before
  the answer;
- a cancelled call is never answered, and the next call is served;
- resources (the session's definitions and systems, a symbol's
  documentation) and prompts;
- log messages (notifications/message) at the level the client sets;
- over HTTP: 401 without the token or with a wrong one, 403 for a foreign
  Origin, two clients at once.

    SLY_AGENT_Q_MCP=build/sly-agent-q-mcp SLY_AGENT_Q_MODULE=build/sly-agent-q-module.so \\
      build/python-sdk/python tests/mcp/python/sdk_client_test.py [TestClass ...]

(run-sdk.sh fetches the SDK and runs it for ctest.)  The last line printed
is the count of passed and failed tests.
"""

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import warnings
from datetime import timedelta

import anyio
import httpx
import jsonschema
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../../.."))
BINARY = os.environ.get("SLY_AGENT_Q_MCP", os.path.join(ROOT, "build/sly-agent-q-mcp"))
EMACS = os.environ.get("EMACS", "emacs")

PROGRESS_CODE = "(progn (dotimes (i 3) (print i) (finish-output) (sleep 0.5)) :done)"
LOOP_CODE = "(progn (print :looping) (finish-output) (loop (sleep 0.01)))"
TEST_SECONDS = 90
WORLD = "code that touches the world outside the Lisp session"
HEADLESS_REFUSAL = (WORLD + " was refused: nobody can approve it headless (--allow-dangerous allows it)")
EMACS_QUESTION = WORLD + " waits for the person's approval in Emacs"
EMACS_DENIAL = WORLD + " was denied in Emacs: the test's approval function says no"


def text_of(result):
    """The one text content of RESULT."""
    assert len(result.content) == 1, result
    assert result.content[0].type == "text", result
    return result.content[0].text


class Connection:
    """A ClientSession and what went over its transport.

    sent and received hold every JSON-RPC message as a dict; received_at
    the monotonic time each received one arrived; errors what the SDK
    reported to the message handler (an answer to an id it had forgotten
    is one)."""

    def __init__(self):
        self.session = None
        self.sent = []
        self.received = []
        self.received_at = []
        self.errors = []
        self.logs = []

    async def log(self, params):
        self.logs.append(params)

    async def handle_message(self, message):
        if isinstance(message, Exception):
            self.errors.append(message)

    async def evaluate(self, code, **options):
        return await self.session.call_tool("evaluate_lisp", {"code": code}, **options)


def as_dict(item):
    return item.message.model_dump(by_alias=True, mode="json", exclude_none=True)


@contextlib.asynccontextmanager
async def recorded(connection, read_stream, write_stream):
    """Streams between READ_STREAM/WRITE_STREAM and a session that record
    every message into CONNECTION."""
    to_session, session_reads = anyio.create_memory_object_stream(100)
    session_writes, from_session = anyio.create_memory_object_stream(100)

    async def pump_in():
        async with to_session:
            async for item in read_stream:
                if isinstance(item, SessionMessage):
                    connection.received.append(as_dict(item))
                    connection.received_at.append(time.monotonic())
                await to_session.send(item)

    async def pump_out():
        async for item in from_session:
            connection.sent.append(as_dict(item))
            await write_stream.send(item)

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        try:
            yield session_reads, session_writes
        finally:
            group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def session_over(read_stream, write_stream):
    """An initialized ClientSession over the streams, as a Connection."""
    connection = Connection()
    async with recorded(connection, read_stream, write_stream) as (reads, writes):
        async with ClientSession(reads, writes, message_handler=connection.handle_message,
                                 logging_callback=connection.log,
                                 read_timeout_seconds=timedelta(seconds=60)) as session:
            connection.session = session
            connection.initialized = await session.initialize()
            yield connection


class SdkClientChecks:
    """What every transport must pass; a subclass gives connect()."""

    def connect(self):
        raise NotImplementedError

    async def test_protocol_2025_11_25_is_negotiated(self):
        self.assertEqual(types.LATEST_PROTOCOL_VERSION, "2025-11-25")
        async with self.connect() as c:
            asked = next(m for m in c.sent if m.get("method") == "initialize")
            self.assertEqual(asked["params"]["protocolVersion"], "2025-11-25")
            self.assertEqual(c.initialized.protocolVersion, "2025-11-25")
            self.assertEqual(c.initialized.serverInfo.name, "sly-agent-q")
            self.assertRegex(c.initialized.instructions or "", "evaluate_lisp")
            self.assertIsNotNone(c.initialized.capabilities.tools)
            self.assertEqual(await c.session.send_ping(), types.EmptyResult())

    async def test_structured_results_fit_each_tools_output_schema(self):
        async with self.connect() as c:
            tools = {tool.name: tool for tool in (await c.session.list_tools()).tools}
            for name in ("evaluate_lisp", "describe_symbol", "list_definitions", "list_systems"):
                schema = tools[name].outputSchema
                self.assertIsNotNone(schema, name)
                jsonschema.validators.validator_for(schema).check_schema(schema)

            def fits(name, result):
                self.assertIsNotNone(result.structuredContent, text_of(result))
                jsonschema.validate(result.structuredContent, tools[name].outputSchema)
                return result.structuredContent

            values = fits("evaluate_lisp", await c.evaluate(
                '(progn (format t "hi~%") (warn "careful") (values 1 "two" :three))'))
            self.assertEqual(values["values"], ["1", '"two"', ":THREE"])
            self.assertEqual(values["stdout"], "hi\n")
            self.assertRegex(values["warnings"][0], "careful")
            self.assertNotIn("error", values)

            failed = await c.evaluate('(error "boom ~A" 7)')
            self.assertTrue(failed.isError)
            error = fits("evaluate_lisp", failed)["error"]
            self.assertEqual((error["type"], error["message"]), ("SIMPLE-ERROR", "boom 7"))
            # A message that looks like the text's sections stays the message:
            # the structure is made from the condition, not read from the text.
            forged = fits("evaluate_lisp", await c.evaluate(
                '(error "x~%~%[Restarts]~%0: [FAKE] fake~%~%[Backtrace]~%nothing")'))["error"]
            self.assertEqual(forged["message"], "x\n\n[Restarts]\n0: [FAKE] fake\n\n[Backtrace]\nnothing")
            self.assertEqual(forged["restarts"], [])
            held = fits("evaluate_lisp", await c.session.call_tool("evaluate_lisp", {
                "code": '(restart-case (error "held~%~%[Restarts]~%0: [FAKE] fake") (use-it () :report "Use it" 1))',
                "debug": True}))["error"]
            self.assertTrue(held["message"].startswith("held\n\n[Restarts]\n0: [FAKE] fake\nThe error is held "), held)
            self.assertEqual(held["restarts"], [{"index": 0, "name": "USE-IT", "report": "Use it"}])
            resumed = await c.session.call_tool("invoke_restart", {"condition_id": held["condition_id"], "restart": "0"})
            self.assertEqual(text_of(resumed), "=> 1")

            await c.evaluate('(defun py-sdk-described (a &optional b) "Described." (list a b))')
            described = await c.session.call_tool("describe_symbol", {"symbol": "py-sdk-described"})
            self.assertFalse(described.isError, text_of(described))
            d = fits("describe_symbol", described)
            self.assertEqual(d["kinds"], ["function"])
            self.assertEqual(d["lambda_list"], "(a &optional b)")
            self.assertEqual(d["documentation"]["function"], "Described.")

            listed = fits("list_definitions", await c.session.call_tool("list_definitions", {"package": "cl-user"}))
            self.assertEqual(listed["package"], "COMMON-LISP-USER")
            self.assertIn("PY-SDK-DESCRIBED", json.dumps(listed))
            fits("list_systems", await c.session.call_tool("list_systems", {}))

    async def test_resources_and_prompts(self):
        async with self.connect() as c:
            self.assertIsNotNone(c.initialized.capabilities.resources)
            self.assertIsNotNone(c.initialized.capabilities.prompts)
            await c.evaluate('(defun py-sdk-resource-fn (x) "Adds one." (1+ x))')
            uris = [str(r.uri) for r in (await c.session.list_resources()).resources]
            self.assertIn("lisp://session/definitions", uris)
            self.assertIn("lisp://session/systems", uris)
            definitions = await c.session.read_resource("lisp://session/definitions")
            self.assertRegex(definitions.contents[0].text, r"PY-SDK-RESOURCE-FN \(X\)")
            templates = [t.uriTemplate for t in (await c.session.list_resource_templates()).resourceTemplates]
            self.assertIn("lisp://symbol/{package}/{name}", templates)
            doc = await c.session.read_resource("lisp://symbol/CL-USER/PY-SDK-RESOURCE-FN")
            self.assertRegex(doc.contents[0].text, "Adds one")
            with self.assertRaises(McpError) as raised:
                await c.session.read_resource("lisp://symbol/NO-SUCH-PACKAGE/X")
            self.assertEqual(raised.exception.error.code, -32002)
            prompts = [p.name for p in (await c.session.list_prompts()).prompts]
            self.assertEqual(prompts, ["explain-error", "explain-symbol", "fix-failing-tests"])
            explained = await c.session.get_prompt("explain-symbol", {"symbol": "py-sdk-resource-fn"})
            self.assertEqual(explained.messages[0].role, "user")
            self.assertRegex(explained.messages[0].content.text, "Adds one")

    async def test_log_messages_at_the_level_the_client_sets(self):
        async with self.connect() as c:
            self.assertIsNotNone(c.initialized.capabilities.logging)
            target = os.path.join(tempfile.gettempdir(), f"agentq-py-sdk-logging-{os.getpid()}")
            code = f"(delete-file {json.dumps(target)})"  # touches the world: asked, and refused

            async def refused():
                result = await c.evaluate(code)
                self.assertTrue(result.isError, text_of(result))
                return next(m for m in reversed(c.received) if m.get("id") is not None and "result" in m)

            await refused()
            self.assertEqual(c.logs, [], "no message before logging/setLevel")
            await c.session.set_logging_level("debug")
            answer = await refused()
            self.assertTrue(c.logs, "a notifications/message at debug")
            for params in c.logs:
                self.assertEqual(params.logger, "sly-agent-q")
                self.assertEqual(params.data["requestId"], answer["id"])
            # On the wire, before the call's answer.
            wire = [i for i, m in enumerate(c.received) if m.get("method") == "notifications/message"]
            self.assertLess(max(wire), c.received.index(answer))
            # Headless: refused, nobody can approve; through Emacs: asked
            # (info) and denied by serve-emacs.el's approval function (notice).
            said = [(p.level, p.data["message"]) for p in c.logs]
            self.assertTrue(("warning", HEADLESS_REFUSAL) in said or
                            ("notice", EMACS_DENIAL) in said and ("info", EMACS_QUESTION) in said, said)
            # Above every level the refusal is logged at: none more.
            await c.session.set_logging_level("error")
            seen = len(c.logs)
            await refused()
            self.assertEqual(len(c.logs), seen)
            with self.assertRaises(McpError) as raised, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pydantic: "loud" is no level, which is the point
                await c.session.send_request(types.ClientRequest(types.SetLevelRequest(
                    params=types.SetLevelRequestParams.model_construct(level="loud"))), types.EmptyResult)
            self.assertEqual(raised.exception.error.code, types.INVALID_PARAMS)
            self.assertFalse(os.path.exists(target))

    async def test_progress_arrives_while_the_call_runs(self):
        async with self.connect() as c:
            seen = []
            started = time.monotonic()

            async def on_progress(progress, total, message):
                seen.append((time.monotonic() - started, progress, message or ""))

            result = await c.evaluate(PROGRESS_CODE, progress_callback=on_progress)
            answered = time.monotonic() - started
            self.assertEqual(text_of(result), "[stdout]\n\n0 \n1 \n2 \n\n=> :DONE")
            self.assertEqual(result.structuredContent["values"], [":DONE"])
            printed = "".join(message for _, _, message in seen)
            self.assertRegex(printed, re.compile(r"0 .*1 .*2 ", re.S), seen)
            # Sent while it ran: the first came well before the answer (the
            # numbers are printed 0.5 s apart).
            self.assertGreaterEqual(len(seen), 2, seen)
            self.assertLess(seen[0][0], answered - 0.5, (seen, answered))
            for before, after in zip(seen, seen[1:]):
                self.assertGreater(after[1], before[1], seen)
            # On the wire, every progress notification precedes the answer.
            call = next(m for m in reversed(c.sent) if m.get("method") == "tools/call")
            self.assertEqual(call["params"]["_meta"]["progressToken"], call["id"])
            answer = next(i for i, m in enumerate(c.received) if m.get("id") == call["id"])
            progress = [i for i, m in enumerate(c.received) if m.get("method") == "notifications/progress"]
            self.assertTrue(progress and max(progress) < answer, c.received)

    async def test_a_cancelled_call_is_never_answered(self):
        async with self.connect() as c:
            running = anyio.Event()

            async def on_progress(progress, total, message):
                running.set()

            outcome = []

            async def call():
                try:
                    outcome.append(await c.evaluate(LOOP_CODE, progress_callback=on_progress))
                except anyio.get_cancelled_exc_class():
                    outcome.append("cancelled")
                    raise

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(30):
                    await running.wait()  # its output came: the loop runs
                group.cancel_scope.cancel()
            self.assertEqual(outcome, ["cancelled"])
            request = next(m for m in reversed(c.sent) if m.get("params", {}).get("arguments", {}).get("code") == LOOP_CODE)
            await c.session.send_notification(types.ClientNotification(types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request["id"], reason="the test cancels it"))))
            # The loop was interrupted: the next call is served.
            self.assertEqual(text_of(await c.evaluate("(+ 40 2)")), "=> 42")
            await anyio.sleep(0.3)
            self.assertEqual([m for m in c.received if m.get("id") == request["id"]], [],
                             "the cancelled request was answered")
            # So the SDK saw no answer to an id it had forgotten.
            self.assertEqual(c.errors, [])


class StdioChecks(SdkClientChecks):
    """Over stdio: the SDK starts the binary with ARGS."""

    args = []

    @contextlib.asynccontextmanager
    async def connect(self):
        server = StdioServerParameters(command=BINARY, args=self.args)
        async with stdio_client(server, errlog=sys.stderr) as (read_stream, write_stream):
            async with session_over(read_stream, write_stream) as connection:
                yield connection


def start_http_server(args, directory):
    """Starts BINARY ARGS --http 0 --http-token-file DIRECTORY/token and
    waits for its URL; returns (process, url, port, token)."""
    token_file = os.path.join(directory, "token")
    process = subprocess.Popen([BINARY, *args, "--http", "0", "--http-token-file", token_file],
                               stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    text = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        sys.stderr.write(line)
        text += line
        found = re.search(r"serving MCP \(Streamable HTTP\) at (http://127\.0\.0\.1:(\d+)/mcp)", text)
        if found and "claude mcp add" in text:
            # Keep its stderr flowing to ours.
            threading.Thread(target=lambda: shutil.copyfileobj(process.stderr, sys.stderr), daemon=True).start()
            with open(token_file) as f:
                return process, found.group(1), int(found.group(2)), f.read().strip()
    process.kill()
    raise RuntimeError(f"sly-agent-q-mcp --http did not start serving:\n{text}")


def stop_http_server(process):
    if process.poll() is None:
        process.stdin.close()  # the end of stdin stops it
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}


class HttpChecks(SdkClientChecks):
    """Over Streamable HTTP: a server started by setUpClass with ARGS."""

    args = []

    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="agentq-py-sdk-http-")
        cls.start_emacs_if_needed()
        cls.server, cls.url, cls.port, cls.token = start_http_server(cls.args, cls.directory)

    @classmethod
    def start_emacs_if_needed(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        stop_http_server(cls.server)
        shutil.rmtree(cls.directory, ignore_errors=True)

    @contextlib.asynccontextmanager
    async def connect(self, token=None):
        headers = {"Authorization": f"Bearer {token or self.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http:
            async with streamable_http_client(self.url, http_client=http) as (read_stream, write_stream, _):
                async with session_over(read_stream, write_stream) as connection:
                    yield connection

    async def post(self, headers):
        async with httpx.AsyncClient(timeout=10) as http:
            return await http.post(self.url, json=INITIALIZE,
                                   headers={"Accept": "application/json, text/event-stream", **headers})

    async def test_without_the_token_401(self):
        self.assertEqual((await self.post({})).status_code, 401)
        self.assertEqual((await self.post({"Authorization": "Bearer 0000"})).status_code, 401)
        self.assertEqual((await self.post({"Authorization": f"Bearer {self.token}x"})).status_code, 401)
        self.assertEqual((await self.post({"Authorization": f"Basic {self.token}"})).status_code, 401)
        # The SDK's client with a wrong token never gets a session.
        with self.assertRaises(BaseException):
            with anyio.fail_after(20):
                async with self.connect(token="0" * 64):
                    pass
        # With it: 200.
        self.assertEqual((await self.post({"Authorization": f"Bearer {self.token}"})).status_code, 200)

    async def test_a_foreign_origin_is_refused(self):
        bearer = {"Authorization": f"Bearer {self.token}"}
        self.assertEqual((await self.post({**bearer, "Origin": "http://evil.example"})).status_code, 403)
        self.assertEqual((await self.post({**bearer, "Origin": f"http://127.0.0.1:{self.port + 1}"})).status_code, 403)
        self.assertEqual((await self.post({**bearer, "Origin": f"http://localhost:{self.port}"})).status_code, 200)

    async def test_two_clients_at_once(self):
        async with self.connect() as a, self.connect() as b:
            self.assertNotEqual(a.session, b.session)
            done = {}

            async def slow_call():
                result = await a.evaluate("(progn (sleep 1) (defparameter *py-sdk-shared* :from-a))")
                done["a"] = time.monotonic()
                self.assertEqual(text_of(result), "=> *PY-SDK-SHARED*")

            async with anyio.create_task_group() as group:
                group.start_soon(slow_call)
                await anyio.sleep(0.3)
                # B is answered meanwhile where no Lisp is needed; its Lisp
                # call waits for A's (one Lisp session).
                await b.session.send_ping()
                done["b_ping"] = time.monotonic()
                self.assertEqual(text_of(await b.evaluate("(+ 1 2)")), "=> 3")
            self.assertLess(done["b_ping"], done["a"])
            # The one Lisp session: what A defined, B sees.
            self.assertEqual(text_of(await b.evaluate("*py-sdk-shared*")), "=> :FROM-A")
            self.assertEqual(a.errors + b.errors, [])


class ServingEmacs:
    """A batch Emacs serving MCP on a socket (tests/mcp/serve-emacs.el)."""

    @staticmethod
    def start(directory):
        socket = os.path.join(directory, "mcp.sock")
        emacs = subprocess.Popen([EMACS, "-Q", "--batch", "-L", os.path.join(ROOT, "elisp"),
                                  "-l", os.path.join(ROOT, "tests/mcp/serve-emacs.el")],
                                 env={**os.environ, "AGENTQ_MCP_SOCKET": socket}, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(socket):
            if emacs.poll() is not None or time.monotonic() > deadline:
                emacs.kill()
                raise RuntimeError(f"Emacs did not start serving MCP at {socket} (exit code {emacs.poll()})")
            time.sleep(0.02)
        return emacs, socket

    @staticmethod
    def stop(emacs):
        if emacs.poll() is None:
            emacs.kill()
            emacs.wait()


class HeadlessStdio(StdioChecks, unittest.IsolatedAsyncioTestCase):
    pass


class HeadlessHttp(HttpChecks, unittest.IsolatedAsyncioTestCase):
    pass


class EmacsStdio(StdioChecks, unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="agentq-py-sdk-emacs-")
        cls.emacs, socket = ServingEmacs.start(cls.directory)
        cls.args = ["--emacs", socket, "--emacs-timeout", "10"]

    @classmethod
    def tearDownClass(cls):
        ServingEmacs.stop(cls.emacs)
        shutil.rmtree(cls.directory, ignore_errors=True)


class EmacsHttp(HttpChecks, unittest.IsolatedAsyncioTestCase):
    @classmethod
    def start_emacs_if_needed(cls):
        cls.emacs, socket = ServingEmacs.start(cls.directory)
        cls.args = ["--emacs", socket, "--emacs-timeout", "10"]

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()  # the server, then the directory
        ServingEmacs.stop(cls.emacs)


def with_deadline(test):
    """TEST, failed when it runs longer than TEST_SECONDS (a hang fails)."""
    async def run(self):
        with anyio.fail_after(TEST_SECONDS):
            await test(self)
    run.__name__ = test.__name__
    run.__doc__ = test.__doc__
    return run


def put_deadlines(*cases):
    for case in cases:
        for name in dir(case):
            if name.startswith("test_"):
                setattr(case, name, with_deadline(getattr(case, name)))


put_deadlines(HeadlessStdio, HeadlessHttp, EmacsStdio, EmacsHttp)


def main():
    # The test case's event loop runs in debug mode, which warns of every
    # step slower than 0.1 s (starting a server is one): not a finding.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    names = sys.argv[1:]
    loader = unittest.TestLoader()
    suite = (loader.loadTestsFromNames(names, sys.modules[__name__]) if names
             else loader.loadTestsFromModule(sys.modules[__name__]))
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"mcp python sdk client ({' '.join(names) or 'all'}): {passed} passed, {failed} failed")
    sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)


if __name__ == "__main__":
    main()
