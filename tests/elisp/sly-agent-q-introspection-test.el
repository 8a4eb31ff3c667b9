;;; sly-agent-q-introspection-test.el --- The introspection tools -*- lexical-binding: t; -*-

;;; Commentary:

;; describe_symbol, apropos_search, function_arglist, list_package_symbols,
;; class_slots, class_hierarchy and macroexpand_form: built-in Lisp tools,
;; registered at boot, called here from Elisp and over MCP on definitions
;; the test makes in the session.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defun agentq-introspection--define ()
  (agentq-test-eval-ok
   "(defpackage \"AGENTQ-SHAPES\" (:use \"CL\") (:export \"SHAPE\" \"AREA\" \"*UNIT*\" \"WITH-UNIT\"))
    (in-package \"AGENTQ-SHAPES\")
    (defvar *unit* :cm \"The unit of every length.\")
    (defclass shape () ((name :initarg :name :accessor shape-name :type string :documentation \"What it is called.\")
                        (count :allocation :class :initform 0 :reader shape-count)))
    (defclass circle (shape) ((radius :initarg :radius :initform 1 :reader radius :writer (setf circle-radius))))
    (defgeneric area (shape) (:documentation \"The area of SHAPE.\"))
    (defmethod area ((c circle)) (* pi (radius c) (radius c)))
    (defmacro with-unit ((unit) &body body) \"Run BODY with *UNIT* bound to UNIT.\" `(let ((*unit* ,unit)) ,@body))
    (defun scale (shape &key (factor 2) origin) \"Scale SHAPE by FACTOR.\" (list shape factor origin))
    (in-package \"CL-USER\")"))

(ert-deftest sly-agent-q-introspection/registered-with-the-contracts-shape ()
  (should (equal (agentq-test-eval-ok "(mapcar #'tool-name (get-agent-q-tools :max-safety-level :safe :categories '(:introspection)))")
                 (concat "=> (\"apropos_search\" \"class_hierarchy\" \"class_slots\" \"describe_symbol\"\n"
                         "    \"function_arglist\" \"inspect_object\" \"list_package_symbols\" \"list_systems\"\n"
                         "    \"macroexpand_form\" \"who_calls\" \"who_references\")")))
  (should (equal (agentq-test-eval-ok "(let ((n (register-agent-q-tools))) (list (= n (register-agent-q-tools)) (= n (length (list-registered-tools)))))")
                 "=> (T T)"))
  ;; Every tool and parameter of theirs has a description a model can use.
  (seq-doseq (tool (agentq-test-get (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/list")) "result" "tools"))
    (when (member (gethash "name" tool) '("describe_symbol" "apropos_search" "function_arglist" "list_package_symbols"
                                           "class_slots" "class_hierarchy" "macroexpand_form"))
      (should (> (length (gethash "description" tool)) 80))
      (maphash (lambda (_name parameter) (should (> (length (gethash "description" parameter)) 20)))
               (agentq-test-get tool "inputSchema" "properties")))))

(ert-deftest sly-agent-q-introspection/describe-symbol ()
  (agentq-introspection--define)
  (should (equal (agentq-test-tool-ok "describe_symbol" '(:symbol "car"))
                 "COMMON-LISP:CAR is a function.\nLambda list: (x)\nFunction documentation: Returns the car of X if X is a cons.  Returns NIL if X is NIL."))
  (let ((text (agentq-test-tool-ok "describe_symbol" '(:symbol "area" :package "agentq-shapes"))))
    (should (string-prefix-p "AGENTQ-SHAPES:AREA is a generic function.\nLambda list: (shape)\nMethods: 1" text))
    (should (string-match-p "Function documentation: The area of SHAPE." text)))
  (should (equal (agentq-test-tool-ok "describe_symbol" '(:symbol "agentq-shapes:*unit*"))
                 "AGENTQ-SHAPES:*UNIT* is a variable.\nValue: :CM\nVariable documentation: The unit of every length."))
  (should (string-prefix-p "AGENTQ-SHAPES:WITH-UNIT is a macro.\nLambda list: ((unit) &body body)"
                           (agentq-test-tool-ok "describe_symbol" '(:symbol "with-unit" :package "AGENTQ-SHAPES"))))
  (should (string-prefix-p "AGENTQ-SHAPES:SHAPE is a class.\nClass: STANDARD-CLASS"
                           (agentq-test-tool-ok "describe_symbol" '(:symbol "shape" :package "agentq-shapes"))))
  ;; Not found: where it looked, and what is close.
  (should (string-prefix-p "Symbol MAPCARR not found in package COMMON-LISP-USER. Did you mean COMMON-LISP:MAPCAR, "
                           (agentq-test-tool-fails "describe_symbol" '(:symbol "mapcarr"))))
  (should (string-prefix-p "Package NO-SUCH-PACKAGE not found."
                           (agentq-test-tool-fails "describe_symbol" '(:symbol "x" :package "no-such-package"))))
  (should (string-match-p "Similar packages: AGENTQ-SHAPES"
                          (agentq-test-tool-fails "describe_symbol" '(:symbol "x" :package "shapes"))))
  ;; Wrong argument types are the executor's errors.
  (should (equal (agentq-test-tool-fails "describe_symbol" '(:symbol 42))
                 "Invalid argument 'symbol': expected string, got integer"))
  (should (equal (agentq-test-tool-fails "describe_symbol" nil) "Missing required argument: symbol")))

(ert-deftest sly-agent-q-introspection/apropos-and-package-symbols ()
  (agentq-introspection--define)
  (should (equal (agentq-test-tool-ok "apropos_search" '(:pattern "circle-rad" :package "agentq-shapes"))
                 "1 symbol matches 'circle-rad':\nAGENTQ-SHAPES::CIRCLE-RADIUS"))
  (should (string-prefix-p "2 symbols match 'hash-table-c':\nCOMMON-LISP:HASH-TABLE-COUNT [function]"
                           (agentq-test-tool-ok "apropos_search" '(:pattern "hash-table-c"))))
  (should (string-match-p ", showing 3:"
                          (agentq-test-tool-ok "apropos_search" '(:pattern "string" :limit 3))))
  (should (equal (agentq-test-tool-ok "apropos_search" '(:pattern "unit" :package "agentq-shapes" :external_only t))
                 "2 symbols match 'unit':\nAGENTQ-SHAPES:*UNIT* [variable]\nAGENTQ-SHAPES:WITH-UNIT [macro]"))
  (should (equal (agentq-test-tool-ok "apropos_search" '(:pattern "zzqqxx")) "No symbols match 'zzqqxx'."))
  (should (equal (agentq-test-tool-ok "list_package_symbols" '(:package "agentq-shapes"))
                 (concat "Package AGENTQ-SHAPES: 4 exported symbols:\n*UNIT* [variable]\nAREA [generic function]\n"
                         "SHAPE [class]\nWITH-UNIT [macro]")))
  (should (string-match-p "^SCALE \\[function\\]$"
                          (agentq-test-tool-ok "list_package_symbols" '(:package "agentq-shapes" :external_only :false))))
  (should (string-prefix-p "Package NOPE not found."
                           (agentq-test-tool-fails "list_package_symbols" '(:package "nope"))))
  (should (equal (agentq-test-tool-fails "apropos_search" '(:pattern "x" :limit "ten"))
                 "Invalid argument 'limit': expected integer, got string")))

(ert-deftest sly-agent-q-introspection/function-arglist ()
  (agentq-introspection--define)
  (should (equal (agentq-test-tool-ok "function_arglist" '(:function "agentq-shapes::scale"))
                 "(scale shape &key (factor 2) origin)\nScale SHAPE by FACTOR."))
  (should (string-prefix-p "(remove-if test sequence &key"
                           (agentq-test-tool-ok "function_arglist" '(:function "remove-if"))))
  (should (equal (agentq-test-tool-fails "function_arglist" '(:function "*print-base*"))
                 "COMMON-LISP:*PRINT-BASE* is not a function or macro. Use describe_symbol to see what it is."))
  (should (string-match-p "special operator"
                          (agentq-test-tool-fails "function_arglist" '(:function "if")))))

(ert-deftest sly-agent-q-introspection/classes ()
  (agentq-introspection--define)
  (should (equal (agentq-test-tool-ok "class_slots" '(:class "circle" :package "agentq-shapes"))
                 (concat "Class AGENTQ-SHAPES::CIRCLE (STANDARD-CLASS), 3 slots:\n"
                         "- AGENTQ-SHAPES::NAME initargs: :NAME readers: SHAPE-NAME writers: (SETF SHAPE-NAME) type: STRING allocation: instance\n"
                         "- COMMON-LISP:COUNT readers: SHAPE-COUNT type: T initform: 0 allocation: class\n"
                         "- AGENTQ-SHAPES::RADIUS initargs: :RADIUS readers: RADIUS writers: (SETF CIRCLE-RADIUS) type: T initform: 1 allocation: instance")))
  (should (equal (agentq-test-tool-ok "class_hierarchy" '(:class "agentq-shapes:shape"))
                 (concat "Class AGENTQ-SHAPES:SHAPE (STANDARD-CLASS)\n"
                         "Superclasses (precedence order): COMMON-LISP:STANDARD-OBJECT → COMMON-LISP:T\n"
                         "Direct subclasses: AGENTQ-SHAPES::CIRCLE")))
  (should (string-match-p "Direct subclasses: .*SIMPLE-TYPE-ERROR"
                          (agentq-test-tool-ok "class_hierarchy" '(:class "type-error"))))
  (should (equal (agentq-test-tool-fails "class_slots" '(:class "scale" :package "agentq-shapes"))
                 "AGENTQ-SHAPES::SCALE names no class (it is a function). Use apropos_search to find the class's name."))
  (should (string-prefix-p "Symbol NO-SUCH-CLASS not found in package COMMON-LISP-USER."
                           (agentq-test-tool-fails "class_hierarchy" '(:class "no-such-class")))))

(ert-deftest sly-agent-q-introspection/macroexpand ()
  (agentq-introspection--define)
  (should (equal (agentq-test-tool-ok "macroexpand_form" '(:form "(when a b c)")) "(if a (progn b c))"))
  (should (equal (agentq-test-tool-ok "macroexpand_form" '(:form "(with-unit (:m) (area x))" :package "agentq-shapes"))
                 "(let ((*unit* :m))\n  (area x))"))
  (should (equal (agentq-test-tool-ok "macroexpand_form" '(:form "(car x)"))
                 "(car x)\n(not a macro call: nothing to expand)"))
  (should (equal (agentq-test-tool-fails "macroexpand_form" '(:form "(when a"))
                 "The form cannot be read: it ends before it is complete (a missing closing parenthesis or quote?)."))
  ;; Reading the form never evaluates it.
  (should (equal (agentq-test-tool-fails "macroexpand_form" '(:form "#.(error \"evaluated\")"))
                 "The form cannot be read: Reader error in file the text, position 21:\nCannot evaluate the form #.(ERROR evaluated)")))

;;; sly-agent-q-introspection-test.el ends here
