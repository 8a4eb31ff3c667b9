// What the SDK client tests read in tools/call results, shared by the
// headless, --emacs and HTTP tests.

import assert from 'node:assert/strict';

// The one text content of RESULT.
export function textOf(result) {
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

// Holds an error with evaluate_lisp's debug flag, through CLIENT, and
// checks what a client sees of it: the [ERROR] text with its condition id
// and restart, the worker serving meanwhile, its backtrace.  Returns the
// condition id.
export async function holdError(client) {
  const held = await client.callTool({ name: 'evaluate_lisp',
    arguments: { code: '(list :got (restart-case (error "boom") (use-it (v) :report "Use a value" v)))', debug: true } });
  assert.equal(held.isError, true);
  const text = textOf(held);
  const match = text.match(/^\[ERROR\] SIMPLE-ERROR \(held: condition (\d+)\)\nboom\n/);
  assert.ok(match, text);
  assert.match(text, /\[Restarts\]\n0: \[USE-IT\] Use a value/);
  const id = Number(match[1]);
  // The worker is free while the error is held.
  const free = await client.callTool({ name: 'evaluate_lisp', arguments: { code: '(+ 1 2)' } });
  assert.equal(textOf(free), '=> 3');
  const frames = await client.callTool({ name: 'backtrace', arguments: { condition_id: id } });
  assert.match(textOf(frames), new RegExp(`^Condition ${id}: SIMPLE-ERROR: boom`));
  return id;
}
