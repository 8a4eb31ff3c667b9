// The world-touching forms of issue 35 ("approvals that hold"), each aimed
// at FILE: an agent's call of any of them must ask, and denied, do nothing.
// Shared by the SDK client tests, headless and through --emacs.

export function worldTouchingForms(file) {
  const f = JSON.stringify(file);
  return [`(delete-file ${f})`,
          `(funcall (intern "DELETE-FILE") ${f})`,
          `(ext:run-program "rm" (list ${f}))`,
          `#.(delete-file ${f})`,
          `(with-open-file (s ${f} :direction :output :if-exists :supersede) (print 1 s))`,
          `(agent-q:eval-in-emacs ${JSON.stringify(`(delete-file ${f})`)})`,
          `(mp:process-join (mp:process-run-function "t" (lambda () (delete-file ${f}))))`,
          '(setf agent-q:*approval-handler* (lambda (tl a) :approved))'];
}
