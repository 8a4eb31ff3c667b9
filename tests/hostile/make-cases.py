#!/usr/bin/env python3
"""Writes the hostile-input corpus: tests/hostile/cases/*.case.

The files are the corpus (committed); this script is how they were made and
how to add to them: edit it, run it from anywhere, commit the result.  It
removes the cases it no longer makes.

A case file is a few header lines, a line "---", then the message: the
bytes sent, as they are (invalid UTF-8 included), without the file's last
newline.  Headers:

  expect: error CODE | result | tool-ok | tool-error | none | batch N
  id: JSON           the response's id (default null)
  contains: TEXT     in the error message or the tool's text (may repeat)
  timeout: SECONDS   the bound on the response (default 15)
  only: inprocess | binary
  then: MESSAGE      a tools/call with id "hostile-then" sent next, which
                     must succeed: it undoes what the case did to the session
  # ...              a comment

The runner (tests/hostile/hostile_test.cpp) adds the large cases (100,000
deep nesting, 50 MB strings, huge objects and batches) and the wrong type
for every argument of every tool, made from tools/list.
"""
import json
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "cases"

cases = {}


def add(name, body, expect, id=None, contains=(), timeout=None, only=None, comment=None, then=None):
    assert name not in cases, name
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    head = []
    if comment:
        head.append("# " + comment)
    head.append("expect: " + expect)
    if expect not in ("none",) and not expect.startswith("batch"):
        head.append("id: " + json.dumps(id))
    for text in ([contains] if isinstance(contains, str) else (contains or ())):
        head.append("contains: " + text)
    if timeout:
        head.append("timeout: %g" % timeout)
    if only:
        head.append("only: " + only)
    if then:
        head.append("then: " + then)
    cases[name] = ("\n".join(head) + "\n---\n").encode() + body + b"\n"


def msg(**members):
    return json.dumps(members, ensure_ascii=False)


def req(id, method, params=None, **extra):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    m.update(extra)
    return json.dumps(m, ensure_ascii=False)


def call(id, name, arguments):
    return req(id, "tools/call", {"name": name, "arguments": arguments})


def ev(id, code, **args):
    a = {"code": code}
    a.update(args)
    return call(id, "evaluate_lisp", a)


PARSE, INVALID, NOMETHOD, PARAMS = "error -32700", "error -32600", "error -32601", "error -32602"

# ------------------------------------------------------------ malformed JSON
for i, text in enumerate([
    "{", "}", "[", "]", "{]", "[}", "{{}}", '{"jsonrpc"}', '{"jsonrpc":}', '{"jsonrpc":"2.0",}',
    '{"jsonrpc":"2.0" "id":1}', "{'jsonrpc':'2.0'}", '{jsonrpc:"2.0"}', '{"jsonrpc":"2.0","id":1,"method":"ping",}',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"},]', '{"a":1}{"b":2}', '{} {}', '{}x', 'x{}', "nul", "tru", "nan",
    "NaN", "Infinity", "-Infinity", "01", "1.", ".5", "+1", "0x10", "1e", "--1", '"unterminated', '"\\x41"',
    '"\\u12"', '"\\uZZZZ"', '"\\ud800"', '"\\udc00\\ud800"', "/* c */ {}", "// c", "{} // c", "#", "\\",
    '{"jsonrpc":"2.0","id":1,"method":"ping"', '{"jsonrpc":"2.0","id":1,"method":"ping"}}', '"\t"', '"a\x01b"',
    '{"jsonrpc":"2.0","id":1,"method":"pi\x1fng"}', "[[[[[", "]]]]]", "{" * 300, "[" * 300 + "]" * 300,
]):
    add("malformed-%02d" % i, text, PARSE, comment="not JSON: %r" % text[:40])

# Cut short at many points: every cut is a parse error, never a hang.
whole = ev(42, '(format nil "~a" "cut")', package="CL-USER")
for cut in sorted(set(list(range(1, 30, 3)) + list(range(30, len(whole) - 1, 7)))):
    add("truncated-%03d" % cut, whole[:cut], PARSE, comment="a tools/call cut after %d bytes" % cut)

# Numbers the parser cannot hold, and ones it can.
add("number-1e400-id", '{"jsonrpc":"2.0","id":1e400,"method":"ping"}', PARSE)
add("number-neg-1e400-param", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-1e400}}', PARSE)
add("number-1e-400-id", '{"jsonrpc":"2.0","id":1e-400,"method":"ping"}', "result", id=0.0)
add("number-huge-int-id", '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}', "result",
    id=1.2345678901234568e29)
add("number-long-digits-param", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":%s}}' % ("9" * 5000),
    PARSE, comment="an integer too large for a double")

# ------------------------------------------------------------ not UTF-8
for i, raw in enumerate([
    b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\x80", b"\xc3", b"a\xc3(b", b"\xf0\x9f\x98",
]):
    q = raw
    add("utf8-method-%02d" % i, b'{"jsonrpc":"2.0","id":1,"method":"' + q + b'"}', PARSE)
    add("utf8-code-%02d" % i,
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"\\"' +
        q + b'\\""}}}', PARSE)
add("utf8-id", b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"ping"}', PARSE)
add("utf8-key", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\xc0\xaf":1}}', PARSE)
add("utf8-outside-strings", b'{"jsonrpc":"2.0",\xff"id":1,"method":"ping"}', PARSE)
add("utf8-bom", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', "result", id=1,
    comment="a byte-order mark before the message is skipped")
add("raw-nul-in-line", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00', PARSE)
add("raw-nul-in-string", b'{"jsonrpc":"2.0","id":1,"method":"pi\x00ng"}', PARSE)
add("raw-nul-alone", b"\x00", PARSE)
add("utf8-good-4-byte", '{"jsonrpc":"2.0","id":"\U0001F600","method":"ping"}', "result", id="\U0001F600")
add("escaped-nul-method", '{"jsonrpc":"2.0","id":1,"method":"ping\\u0000"}', NOMETHOD, id=1)
add("escaped-surrogate-pair", '{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"ping"}', "result", id="\U0001F600")
add("escaped-lone-surrogate-in-code", ev(3, "x").replace('"x"', '"\\udfff"'), PARSE)

# ------------------------------------------------------------ blank lines and whitespace
add("blank", "", "none", only="binary", comment="an empty line is skipped, unanswered")
add("spaces", "   \t ", "none", only="binary")
add("cr-only", "\r", "none", only="binary")
add("crlf-ending", '{"jsonrpc":"2.0","id":1,"method":"ping"}\r', "result", id=1)
add("leading-whitespace", ' \t {"jsonrpc":"2.0","id":1,"method":"ping"}  ', "result", id=1)
add("pretty-printed", '{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "method": "ping"\n}', "result", id=1,
    only="inprocess", comment="JSON whitespace may hold newlines; over stdio each line is a message")
add("form-feed", '\x0c{"jsonrpc":"2.0","id":1,"method":"ping"}', PARSE)

# ------------------------------------------------------------ not a request
for i, text in enumerate(["null", "true", "false", "0", "-1", "3.5", '"ping"', '""', "{}",
                          '{"id":1}', '{"method":"ping"}', '{"jsonrpc":"2.0"}', '{"result":{},"id":1,"jsonrpc":"2.0"}',
                          '{"error":{"code":1,"message":"x"},"id":1,"jsonrpc":"2.0"}']):
    add("not-request-%02d" % i, text, INVALID, id=1 if '"id":1' in text else None)

# ------------------------------------------------------------ jsonrpc member
for i, value in enumerate([None, 2.0, 2, "1.0", "2", "2.0 ", " 2.0", "2.00", "", True, [], {}, ["2.0"]]):
    add("jsonrpc-%02d" % i, '{"jsonrpc":%s,"id":1,"method":"ping"}' % json.dumps(value), INVALID, id=1,
        contains="jsonrpc")
add("jsonrpc-missing", '{"id":1,"method":"ping"}', INVALID, id=1)
add("jsonrpc-missing-notification", '{"method":"notifications/initialized"}', INVALID,
    comment="no id but malformed: the error is sent, with id null")

# ------------------------------------------------------------ id of every JSON type
for i, (value, expect) in enumerate([
    (1, "result"), (0, "result"), (-1, "result"), (9007199254740993, "result"), (18446744073709551615, "result"),
    (-9223372036854775808, "result"), (1.5, "result"), (-0.0, "result"), (1e300, "result"), ("", "result"),
    ("x", "result"), ("1", "result"), ("\u0000", "result"), ("a" * 10000, "result"), (None, "result"),
    ("\u00e9\u4e2d\U0001F600", "result"), ('"quoted"\\', "result"),
]):
    add("id-ok-%02d" % i, '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % json.dumps(value, ensure_ascii=False),
        expect, id=value)
for i, value in enumerate([True, False, [], [1], {}, {"id": 1}]):
    add("id-bad-%02d" % i, '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % json.dumps(value), INVALID, contains="id")
    add("id-bad-call-%02d" % i, '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"evaluate_lisp",'
        '"arguments":{"code":"(+ 1 2)"}}}' % json.dumps(value), INVALID)

# ------------------------------------------------------------ method
for i, value in enumerate([None, 1, True, [], {}, ["ping"], {"name": "ping"}]):
    add("method-type-%02d" % i, '{"jsonrpc":"2.0","id":1,"method":%s}' % json.dumps(value), INVALID, id=1,
        contains="method")
add("method-missing", '{"jsonrpc":"2.0","id":1}', INVALID, id=1)
for i, value in enumerate(["", "PING", "Ping", " ping", "ping ", "tools/CALL", "tools/call/", "tools", "rpc.discover",
                           "resources/subscribe", "prompts/LIST", "completion/complete", "logging/setlevel",
                           "sampling/createMessage", "../tools/call", "a" * 100000]):
    add("method-unknown-%02d" % i, req(1, value), NOMETHOD, id=1, contains="Method not found")
add("method-unknown-notification", '{"jsonrpc":"2.0","method":"no/such"}', "none")

# ------------------------------------------------------------ logging/setLevel
add("logging-setlevel-no-params", req(1, "logging/setLevel"), PARAMS, id=1, contains="level must be one of")
for i, value in enumerate([None, 1, True, [], {}, "", "WARNING", "warn", "info ", "\u0000", "a" * 100000]):
    add("logging-setlevel-bad-%02d" % i, req(1, "logging/setLevel", {"level": value}), PARAMS, id=1,
        contains="level must be one of")
add("logging-setlevel-ok", req(1, "logging/setLevel", {"level": "emergency"}), "result", id=1)

# ------------------------------------------------------------ resources and prompts
NOT_FOUND = "error -32002"
for i, value in enumerate([None, 1, [], {}, True]):
    add("resources-read-uri-type-%02d" % i, req(1, "resources/read", {"uri": value}), PARAMS, id=1, contains="uri")
for i, uri in enumerate(["", "lisp://", "lisp://symbol/", "lisp://symbol/CL-USER", "lisp://symbol//CAR",
                         "lisp://symbol/CL-USER/%", "lisp://symbol/CL-USER/%zz", "lisp://symbol/CL-USER/%00",
                         "lisp://symbol/CL%00USER/CAR", "lisp://symbol/CL-USER/%23.(ext:quit)",
                         "lisp://symbol/NO-SUCH-PACKAGE/CAR", "lisp://package/%23.(loop)", "lisp://package/a/b",
                         "lisp://package/" + "a" * 100000, "file:///etc/passwd", "lisp://session/definitions/../../x"]):
    add("resources-read-hostile-%02d" % i, req(1, "resources/read", {"uri": uri}), NOT_FOUND, id=1, timeout=30)
add("resources-read-symbol", req(1, "resources/read", {"uri": "lisp://symbol/CL/CAR"}), "result", id=1)
for i, args in enumerate([None, [], {"symbol": 1}, {"symbol": ""}, {"symbol": "\u0000"}, {"symbol": "#.(ext:quit)"},
                          {"symbol": "car", "package": "#.(loop)"}]):
    expect = PARAMS if args in (None, [], {"symbol": 1}, {"symbol": ""}) else "result"
    add("prompts-get-hostile-%02d" % i, req(1, "prompts/get", {"name": "explain-symbol", "arguments": args}), expect,
        id=1, timeout=30)
add("prompts-get-unknown", req(1, "prompts/get", {"name": "rm -rf"}), PARAMS, id=1, contains="Unknown prompt")
add("notification-initialized", '{"jsonrpc":"2.0","method":"notifications/initialized"}', "none")
add("notification-ping", '{"jsonrpc":"2.0","method":"ping"}', "none")
add("notification-tools-call", '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"evaluate_lisp",'
    '"arguments":{"code":"(defparameter cl-user::*hostile-notified* t)"}}}', "none",
    comment="a tools/call without id is a notification: not run, not answered")
add("notification-tools-call-z-not-run", ev(1, "(boundp 'cl-user::*hostile-notified*)"), "tool-ok", id=1,
    contains="=> NIL", comment="runs after notification-tools-call (cases run in name order): it did not run")
add("notification-cancelled-unknown", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":987654}}',
    "none")
for i, params in enumerate([None, [], "x", 1, {}, {"requestId": None}, {"requestId": []}, {"requestId": {}},
                            {"requestId": True}, {"requestId": "a" * 100000}]):
    m = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    if params is not None:
        m["params"] = params
    add("notification-cancelled-%02d" % i, json.dumps(m), "none")
add("cancelled-as-request", req(1, "notifications/cancelled", {"requestId": 1}), "result", id=1)
add("initialized-as-request", req(1, "notifications/initialized"), "result", id=1)

# ------------------------------------------------------------ params of every type, for every method
for method in ["initialize", "ping", "tools/list", "tools/call"]:
    for i, value in enumerate([None, [], [1], "x", 0, True]):
        add("params-%s-%02d" % (method.replace("/", "-"), i), json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": value}), PARAMS, id=1,
            contains="params")
add("initialize-no-params", req(1, "initialize"), "result", id=1)
add("initialize-old-version", req(1, "initialize", {"protocolVersion": "2024-11-05"}), "result", id=1,
    contains=None)
for i, value in enumerate([None, 1, [], {}, "1999-01-01", "2025-06-18\u0000", "x" * 100000]):
    add("initialize-version-%02d" % i, req(1, "initialize", {"protocolVersion": value, "capabilities": value,
                                                              "clientInfo": value}), "result", id=1)
add("ping-with-params", req(1, "ping", {"a": [1, {"b": None}]}), "result", id=1)
add("tools-list-cursor", req(1, "tools/list", {"cursor": {"x": 1}}), "result", id=1)

# ------------------------------------------------------------ tools/call: name and arguments
add("call-no-params", req(1, "tools/call"), PARAMS, id=1)
add("call-empty-params", req(1, "tools/call", {}), PARAMS, id=1, contains="name")
for i, value in enumerate([None, 1, True, [], {}, ["evaluate_lisp"]]):
    add("call-name-type-%02d" % i, req(1, "tools/call", {"name": value, "arguments": {"code": "1"}}), PARAMS, id=1,
        contains="name")
for i, value in enumerate(["", "no_such_tool", "EVALUATE_LISP", " evaluate_lisp", "evaluate_lisp\u0000",
                           "evaluate_lisp\u0000x", "../evaluate_lisp", "a" * 100000, "\U0001F600"]):
    add("call-name-unknown-%02d" % i, req(1, "tools/call", {"name": value, "arguments": {"code": "1"}}), PARAMS,
        id=1, contains="Unknown tool")
# The project tools are Emacs's (elisp/sly-agent-q-project-tools.el): this
# corpus runs against servers without Emacs, where calling them, however
# hostile the arguments, is an unknown tool.  In Emacs, the same arguments
# go to them in tests/elisp/sly-agent-q-project-tools-test.el
# (sly-agent-q-project-tools/hostile-arguments).
for tool, key in [("list_directory", "path"), ("search_files", "regexp"), ("find_definitions", "name"),
                  ("get_diagnostics", "path")]:
    for j, value in enumerate(["../../etc", "\u0000", "\\(a*\\)*b", "#.(ext:quit)"]):
        add("emacs-tool-%s-%02d" % (tool, j), call(12, tool, {key: value}), PARAMS, id=12, contains="Unknown tool")
add("call-name-alias", req(1, "tools/call", {"name": "evaluate-lisp", "arguments": {"code": "(+ 1 2)"}}),
    "tool-ok", id=1, contains="=> 3")
for i, value in enumerate(["x", 1, True, [], ["code"], [{"code": "1"}]]):
    # Invalid arguments are the tool's error, which the model sees (MCP 2025-11-25, SEP-1303).
    add("call-arguments-type-%02d" % i, req(1, "tools/call", {"name": "evaluate_lisp", "arguments": value}),
        "tool-error", id=1, contains="arguments")
add("call-arguments-null", req(1, "tools/call", {"name": "evaluate_lisp", "arguments": None}), "tool-error", id=1,
    contains="code")
add("call-arguments-missing", req(1, "tools/call", {"name": "evaluate_lisp"}), "tool-error", id=1, contains="code")
add("call-arguments-missing-none-needed", req(1, "tools/call", {"name": "get_last_error"}), "result", id=1)
add("call-code-null", call(1, "evaluate_lisp", {"code": None}), "tool-error", id=1, contains="code")
# Names the tool does not take are refused (the schema says additionalProperties: false); a null one is absent.
add("call-extra-arguments", call(1, "evaluate_lisp", {"code": "(+ 1 2)", "extra": [1, 2], "": None, "\u0000": 1}),
    "tool-error", id=1, contains="Unknown argument")
add("call-extra-null-argument", call(1, "evaluate_lisp", {"code": "(+ 1 2)", "extra": None}),
    "tool-ok", id=1, contains="=> 3")
add("call-old-argument-name", call(1, "evaluate_lisp", {"code": "(+ 1 2)", "capture-time": True}),
    "tool-ok", id=1, contains="=> 3")
add("call-extra-params", req(1, "tools/call", {"name": "evaluate_lisp", "arguments": {"code": "(+ 1 2)"},
                                               "_meta": {"progressToken": [1]}, "x": None}), "tool-ok", id=1)

# ------------------------------------------------------------ duplicate keys (the last one wins)
add("dup-id", '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', "result", id=2)
add("dup-method", '{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping"}', "result", id=1)
add("dup-method-unknown-last", '{"jsonrpc":"2.0","id":1,"method":"ping","method":"nope"}', NOMETHOD, id=1)
add("dup-jsonrpc", '{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"ping"}', "result", id=1)
add("dup-jsonrpc-bad-last", '{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}', INVALID, id=1)
add("dup-params", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"},'
    '"params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}}', "tool-ok", id=1, contains="=> 3")
add("dup-code", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp",'
    '"arguments":{"code":"(ext:quit)","code":"(+ 1 2)"}}}', "tool-ok", id=1, contains="=> 3")
add("dup-name", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","name":"nope",'
    '"arguments":{"code":"1"}}}', PARAMS, id=1)

# ------------------------------------------------------------ batches
ping = json.loads(req(1, "ping"))
add("batch-empty", "[]", INVALID, contains="empty batch")
add("batch-nested-empty", "[[]]", "batch 1")
add("batch-numbers", "[1,2,3]", "batch 3")
add("batch-good-and-bad", json.dumps([ping, {"jsonrpc": "2.0", "id": 2, "method": "nope"}, 5,
                                      {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                      {"jsonrpc": "1.0", "id": 3, "method": "ping"}]), "batch 4")
add("batch-with-eval", json.dumps([json.loads(ev(1, "(+ 1 2)")), ping, json.loads(ev(2, "(error \"b\")"))]),
    "batch 3")
add("batch-notifications-only", json.dumps([{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 3), "none")
add("batch-of-batch", json.dumps([[ping], [ping, ping]]), "batch 2")
add("batch-same-ids", json.dumps([ping] * 20), "batch 20")
add("batch-truncated", json.dumps([ping, ping])[:-2], PARSE)
add("batch-with-bad-utf8", b'[{"jsonrpc":"2.0","id":1,"method":"ping"},"\xff"]', PARSE)
add("batch-mixed-id-types", json.dumps([dict(ping, id=v) for v in [1, "1", None, 1.5, -7, ""]]), "batch 6")
add("batch-reader-tricks", json.dumps([json.loads(ev(i, c, timeout=1)) for i, c in
                                       enumerate(["#.(ext:quit)", "#.(error \"x\")", "(+ 1 2)"])]), "batch 3")

# ------------------------------------------------------------ reader-macro tricks in evaluate_lisp code
TRICKS = [
    ("sharp-dot-quit", "#.(ext:quit)", "tool-error", "EXIT"),
    ("sharp-dot-quit-code", "#.(ext:quit 3)", "tool-error", "EXIT"),
    ("sharp-dot-exit", "#.(ext:exit 4)", "tool-error", "EXIT"),
    ("sharp-dot-si-quit", "#.(si:quit)", "tool-error", None),
    ("sharp-dot-exit-process", "#.(mp:exit-process)", "tool-error", None),
    ("sharp-dot-loop", "#.(loop)", "tool-error", "TIMEOUT"),
    ("sharp-dot-loop-printing", "#.(loop (princ \"x\"))", "tool-error", "TIMEOUT"),
    ("sharp-dot-error", "#.(error \"read-time ~a\" 1)", "tool-error", "SIMPLE-ERROR"),
    ("sharp-dot-error-condition", "#.(error 'type-error :datum 1 :expected-type 'string)", "tool-error", "TYPE-ERROR"),
    ("sharp-dot-signal", "#.(signal \"x\")", "tool-ok", None),
    ("sharp-dot-warn", "#.(warn \"careful\")", "tool-ok", None),
    ("sharp-dot-break", "#.(break)", "tool-error", None),
    ("sharp-dot-invoke-debugger", "#.(invoke-debugger (make-condition 'simple-error :format-control \"d\"))",
     "tool-error", None),
    ("sharp-dot-throw", "#.(throw 'no-such-tag 1)", "tool-error", None),
    ("sharp-dot-read-line", "#.(read-line)", "tool-error", None),
    ("sharp-dot-read-query-io", "#.(read *query-io*)", "tool-error", None),
    ("sharp-dot-y-or-n", "#.(y-or-n-p \"really?\")", "tool-error", None),
    ("sharp-dot-stack-overflow", "#.(labels ((f (x) (1+ (f x)))) (f 1))", "tool-error", None),
    ("sharp-dot-read-eval-off", "#.(setf *read-eval* nil) #.(+ 1 2)", "tool-error", None),
    ("sharp-dot-package-keyword", "#.(setf *package* (find-package :keyword)) foo", "tool-ok", None),
    ("sharp-dot-in-package-nowhere", "#.(in-package :no-such-package-xyz)", "tool-error", None),
    ("sharp-dot-delete-no-package", "#.(delete-package :no-such-package-abc) 1", "tool-error", "PACKAGE-ERROR"),
    ("sharp-dot-nul-char", "#.(code-char 0)", "tool-ok", None),
    ("sharp-dot-nul-string", "#.(format nil \"a~cb\" (code-char 0))", "tool-ok", None),
    ("sharp-dot-nul-symbol", "#.(intern (format nil \"A~cB\" (code-char 0)))", "tool-error", "UNBOUND-VARIABLE"),
    ("sharp-dot-nul-symbol-quoted", "'#.(intern (format nil \"A~cB\" (code-char 0)))", "tool-ok", None),
    ("sharp-dot-nul-package", "#.(make-package (format nil \"HOSTILE~cPKG\" (code-char 0)))", "tool-ok", None),
    ("sharp-dot-restart", "#.(invoke-restart 'no-such-restart)", "tool-error", None),
    ("sharp-dot-abort", "#.(abort)", "tool-error", None),
    ("sharp-dot-gc", "#.(progn (ext:gc t) 1)", "tool-ok", "=> 1"),
    ("sharp-plus-quit", "#+ecl 1 #-ecl (ext:quit)", "tool-ok", "=> 1"),
    ("sharp-minus-quit", "#-(or) 2 #+(or) (ext:quit)", "tool-ok", "=> 2"),
    ("sharp-plus-nil", "#+nil (ext:quit) 3", "tool-ok", "=> 3"),
    ("sharp-plus-sharp-dot", "#+#.(cl-user::ext:quit) 1", "tool-error", None),
    ("sharp-plus-sharp-dot-loop", "#+#.(cl:loop) 1", "tool-error", "TIMEOUT"),
    ("sharp-plus-features-push", "#.(progn (push :hostile-feature *features*) nil) #+hostile-feature 4",
     "tool-ok", None),
    ("sharp-plus-unknown-package", "#+(no-such-pkg:x) 1 5", "tool-error", None),
    ("sharp-plus-malformed", "#+(1 2 3) 6", "tool-error", None),
    ("sharp-plus-at-end", "#+ecl", "tool-error", None),
    ("sharp-minus-at-end", "#-", "tool-error", None),
    ("circular-quoted", "'#1=(#1#)", "tool-ok", None),
    ("circular-cdr", "'#1=(a . #1#)", "tool-ok", None),
    ("circular-vector", "'#1=#(#1#)", "tool-ok", None),
    ("circular-evaluated", "#1=(progn #1#)", "tool-error", None),
    ("circular-self", "#1=#1#", "tool-error", None),
    ("circular-undefined-label", "'#2#", "tool-error", None),
    ("circular-print-circle-off", "(let ((x (list 1))) (setf (cdr x) x) (setf *print-circle* nil) x)",
     "tool-ok", None),
    ("sharp-unreadable", "#<foo>", "tool-error", None),
    ("sharp-close", "#)", "tool-error", None),
    ("sharp-backslash-end", "#\\", "tool-error", None),
    ("sharp-pipe-unterminated", "#| never closed", "tool-error", None),
    ("string-unterminated", "\"never closed", "tool-error", None),
    ("list-unterminated", "(((", "tool-error", None),
    ("close-paren", ")", "tool-error", None),
    ("sharp-sharp-quote-nul", "#'|a\u0000b|", "tool-error", None),
    ("symbol-with-nul", "'|a\u0000b|", "tool-ok", None),
    ("package-prefix-nul", "'cl-user\u0000::x", "tool-error", None),
    ("package-qualified-nul", "'|NO\u0000PKG|::x", "tool-error", None),
    ("keyword-nul", ":\u0000", "tool-error", "READER-ERROR"),
    ("sharp-s-bad", "#S(no-such-struct)", "tool-error", None),
    ("sharp-p-nul", "#p\"/tmp/\u0000x\"", "result", None),
    ("sharp-star-bad", "#*12", "tool-error", None),
    ("sharp-a-huge", "#1000000000A()", "tool-error", None),
    ("sharp-r-bad", "#37r10", "tool-error", None),
    ("sharp-c-bad", "#c(1)", "tool-error", None),
    ("read-base-36", "#.(setf *read-base* 36) zz", "tool-ok", "=> 1295"),
    ("readtable-clobber", "#.(set-macro-character #\\( (lambda (s c) (declare (ignore s c)) (ext:quit))) (+ 1 2)",
     "result", None),
    ("only-comments", "; nothing here", "tool-ok", None),
    ("empty-code", "", "tool-ok", None),
    ("whitespace-code", " \t\n\r ", "tool-ok", None),
    ("nul-code", "\u0000", "tool-error", None),
    ("many-values", "(values-list (make-list 1000 :initial-element 7))", "result", None),
    ("no-values", "(values)", "tool-ok", None),
    ("huge-bignum", "(expt 7 100000)", "tool-ok", None),
    ("huge-output", "(dotimes (i 200000) (princ \"0123456789\"))", "result", None),
    ("heap-exhaustion", "(make-array (expt 10 12))", "tool-error", None),
    ("quit-in-unwind-protect", "(unwind-protect (error \"a\") (ext:quit))", "tool-error", None),
    ("exit-in-handler", "(handler-bind ((error (lambda (c) (declare (ignore c)) (ext:quit)))) (error \"x\"))",
     "tool-error", None),
    ("sharp-dot-process-run", "#.(progn (mp:process-run-function 'hostile (lambda () (sleep 0.01))) 8)",
     "tool-ok", None),
]
# The session keeps what these change, as a REPL does; THEN puts it back
# (reset_session for a clobbered readtable), before the next good request.
RESTORE = {
    "read-base-36": ev("hostile-then", "(|SETF| |*READ-BASE*| 10.)"),
    "sharp-dot-package-keyword": ev("hostile-then", "(cl:in-package :cl-user)"),
    "sharp-dot-read-eval-off": ev("hostile-then", "(setf *read-eval* t)"),
    "readtable-clobber": call("hostile-then", "reset_session", {}),
}
for name, code, expect, contains in TRICKS:
    add("lisp-" + name, ev(7, code, timeout=1), expect, id=7, contains=contains or (), timeout=30,
        then=RESTORE.get(name))

# The session's reader state is the user's to keep: after the readtable,
# base and package tricks, the next evaluation reads normally.
add("lisp-after-tricks", ev(8, "(list (+ 1 2) *read-base* (package-name *package*))"), "tool-ok", id=8,
    contains="=> (3 10 \"COMMON-LISP-USER\")")

# ------------------------------------------------------------ package and symbol names with NULs, odd packages
for i, pkg in enumerate(["\u0000", "CL-USER\u0000", "\u0000CL-USER", "", ":", "::", "KEYWORD", "NO-SUCH-PACKAGE",
                         "cl-user", "a" * 100000, "\U0001F600", "CL-USER\nX"]):
    add("eval-package-%02d" % i, ev(9, "(+ 1 2)", package=pkg), "result", id=9)
for tool, key, extra in [("describe_symbol", "symbol", {}), ("function_arglist", "function", {}),
                         ("who_calls", "function", {}), ("who_references", "symbol", {}),
                         ("class_hierarchy", "class", {}), ("class_slots", "class", {}),
                         ("apropos_search", "pattern", {"limit": 5}), ("list_package_symbols", "package", {"limit": 5}),
                         ("macroexpand_form", "form", {}), ("compile_form", "form", {}), ("eval_form", "form", {}),
                         ("load_system", "name", {}), ("inspect_object", "symbol", {}),
                         ("check_syntax", "code", {}), ("describe_system", "name", {}),
                         ("list_systems", "filter", {"limit": 5}),
                         ("profile_form", "code", {}), ("run_tests", "system", {}),
                         ("invoke_restart", "restart", {"condition_id": 1}),
                         ("eval_in_frame", "code", {"condition_id": 1, "frame": 0})]:
    for j, value in enumerate(["A\u0000B", "\u0000", "CL-USER\u0000::CAR", "|\u0000|", "#.(ext:quit)",
                               "#.(loop)" if tool not in ("eval_form", "compile_form", "macroexpand_form", "profile_form") else "x"]):
        args = {key: value}
        args.update(extra)
        args_pkg = dict(args)
        add("tool-%s-%02d" % (tool, j), call(10, tool, args), "result", id=10, timeout=40)
    if tool not in ("describe_system", "load_system", "list_systems", "invoke_restart", "eval_in_frame"):  # no package to give
        add("tool-%s-package-nul" % tool, call(11, tool, dict({key: "CAR", "package": "CL\u0000USER"}, **extra)),
            "result", id=11, timeout=40)

# profile_form's mode sample: the hostile code under the sampler, and intervals out of range
# refused by the schema's check before anything runs.
for j, value in enumerate(["A\u0000B", "#.(ext:quit)", "(error \"x\")", "(ext:gc)", "(sort (list 3 1 2) #'<)"]):
    add("tool-profile_form-sample-%02d" % j, call(12, "profile_form", {"code": value, "mode": "sample"}), "result",
        id=12, timeout=40)
for j, value in enumerate([0, 999, 100001, -1, 10 ** 12]):
    add("tool-profile_form-interval-%02d" % j,
        call(13, "profile_form", {"code": "(+ 1 2)", "mode": "sample", "interval_us": value}), "tool-error", id=13,
        contains="interval_us")
add("tool-profile_form-interval-not-integer",
    call(13, "profile_form", {"code": "(+ 1 2)", "mode": "sample", "interval_us": 1500.5}), "tool-error", id=13,
    contains="interval_us")

# edit_form and insert_form are Emacs's tools (a file, its buffer and the review): the
# headless server has none, whatever the arguments; sly-agent-q-form-edit-test.el
# calls them with bad names, unreadable source and paths outside the roots.
for tool, args in [("edit_form", {"path": "/etc/passwd\u0000", "kind": "defun\u0000", "name": "|\u0000|",
                                  "new_source": "#.(ext:quit)"}),
                   ("insert_form", {"path": "../../x.lisp", "new_source": "(defun x () #.(loop))",
                                    "after": "defun \u0000"})]:
    add("tool-%s-headless" % tool, call(12, tool, args), PARAMS, id=12, contains="Unknown tool")

# ------------------------------------------------------------ write the files
OUT.mkdir(exist_ok=True)
for old in OUT.glob("*.case"):
    if old.stem not in cases:
        old.unlink()
for name, data in cases.items():
    (OUT / (name + ".case")).write_bytes(data)
print("%d cases in %s" % (len(cases), os.path.relpath(OUT)))
