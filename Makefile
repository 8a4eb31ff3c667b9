# sly-agent-q — `make run' and `make test' are all a fresh Debian machine needs.

BUILD_DIR ?= build
EMACS ?= emacs
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_BUILD_TYPE ?= RelWithDebInfo

# Debian packages the build and the tests need.
DEB_PACKAGES = emacs-nox ecl libecl-dev nlohmann-json3-dev libgtest-dev libgc-dev libgmp-dev cmake g++ make tmux cl-alexandria cl-fiveam curl elpa-package-lint
# Node, for the MCP test with the official SDK (tests/mcp): Debian's, unless
# a node and an npm are on the PATH already (NodeSource's nodejs carries
# npm and conflicts with Debian's npm package).
NODE_PACKAGES = nodejs npm
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# `make fuzz' and `make test-asan': sanitized builds in their own directories.
FUZZ_DIR ?= build-fuzz
ASAN_DIR ?= build-asan
FUZZ_SECONDS ?= 60
# clang and its libFuzzer runtime (Debian 12: clang 14).
FUZZ_PACKAGES = clang libclang-rt-14-dev

.PHONY: all deps deps-fuzz autoloads lint build build-run test test-core test-elisp test-asan fuzz run bench check-fresh clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing="$$missing $(NODE_PACKAGES)"; fi; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deps-fuzz: deps
	@missing=""; for p in $(FUZZ_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD_DIR)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)

# What running needs: the module, the MCP server, gcc's keeper, the
# byte-compiled Elisp.  `build' adds the tests and benchmarks.
RUN_TARGETS = sly-agent-q-module sly-agent-q-mcp sly-agent-q-run-compiler

build-run: deps $(BUILD_DIR)/Makefile
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(RUN_TARGETS)
	$(MAKE) --no-print-directory autoloads
	$(EMACS) -Q --batch -L elisp --eval '(setq byte-compile-error-on-warn t load-prefer-newer t)' -f batch-byte-compile elisp/*.el

# elisp/sly-agent-q-autoloads.el, from the ;;;###autoload cookies (not in
# git; cmake/autoloads.el, which the CMake build runs too).
AUTOLOADS = elisp/sly-agent-q-autoloads.el
autoloads:
	$(EMACS) -Q --batch -l cmake/autoloads.el

# checkdoc over every .el, then package-lint (Debian's elpa-package-lint)
# with sly-agent-q.el as the package's main file; its warnings are shown
# but do not fail it (0.16 does not know Emacs 28, so it warns about
# Package-Requires).
ELPA_DIRS = $(foreach d,$(wildcard /usr/share/emacs/site-lisp/elpa/package-lint-*/ /usr/share/emacs/site-lisp/elpa/let-alist-*/),-L $(d))
LINT_FILES = $(filter-out $(AUTOLOADS),$(wildcard elisp/*.el))
lint: deps
	@for f in $(LINT_FILES); do \
	  $(EMACS) -Q --batch -L elisp --eval "(checkdoc-file \"$$f\")" 2>&1 | grep -v '^Warning (emacs): $$' | grep . && exit 1; \
	done; echo "checkdoc: clean"
	$(EMACS) -Q --batch -L elisp $(ELPA_DIRS) --eval '(progn (require (quote package-lint)) (package-initialize) (setq package-lint-main-file "elisp/sly-agent-q.el") (let ((errors 0)) (dolist (file command-line-args-left) (with-temp-buffer (insert-file-contents file t) (emacs-lisp-mode) (dolist (problem (package-lint-buffer)) (apply (quote message) "%s:%d:%d: %s: %s" file problem) (when (eq (nth 2 problem) (quote error)) (setq errors (1+ errors)))))) (message "package-lint: %d errors" errors) (kill-emacs (min errors 1))))' $(LINT_FILES)

build: build-run
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-elisp

test-elisp:
	$(EMACS) -Q --batch -L elisp -L tests/elisp -l tests/elisp/run-tests.el

# libFuzzer over the MCP entry points (tests/fuzz/mcp_fuzz.cpp), seeded with
# the hostile corpus's messages; what it finds goes to $(FUZZ_DIR)/findings,
# the inputs it grows to $(FUZZ_DIR)/corpus (kept between runs).
# `make fuzz FUZZ_SECONDS=600' for ten minutes.
fuzz: deps-fuzz
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGENTQ_FUZZ=ON
	cmake --build $(FUZZ_DIR) --target mcp_fuzz -j $(JOBS)
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/seeds $(FUZZ_DIR)/corpus $(FUZZ_DIR)/findings
	for f in tests/hostile/cases/*.case; do sed '1,/^---$$/d' "$$f" > $(FUZZ_DIR)/seeds/$$(basename "$$f" .case); done
	$(FUZZ_DIR)/mcp_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 -rss_limit_mb=4096 \
	  -print_final_stats=1 -dict=tests/fuzz/json.dict -artifact_prefix=$(FUZZ_DIR)/findings/ \
	  $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds

# The GoogleTest suites (core, ecl, mcp, hostile) built with AddressSanitizer
# and UndefinedBehaviorSanitizer; not part of `make test'.  ECL needs:
#   detect_leaks=0: the Boehm GC's heap is not malloc's; what only it holds
#     (and ECL's image, kept for the process's life) looks leaked;
#   handle_segv=0, allow_user_segv_handler=1: ECL's SIGSEGV/SIGBUS handlers
#     turn a stack overflow (guard page) into a Lisp condition;
#   detect_stack_use_after_return=0: the GC scans the C stack for roots,
#     and ASan's fake stack frames would hide them from it.
# (module/ecl is compiled without UBSan's alignment check: cmake/runtime.cmake.)
# The ERT and tmux tests, and the SDK tests (Node, Python), are left out:
# they run the module inside an Emacs that was not built with ASan.
ASAN_OPTIONS_ECL = detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:detect_stack_use_after_return=0:abort_on_error=1
test-asan: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGENTQ_SANITIZE=ON
	cmake --build $(ASAN_DIR) --target core_tests ecl_tests mcp_tests hostile_tests sly-agent-q-mcp -j $(JOBS)
	cd $(ASAN_DIR) && ASAN_OPTIONS=$(ASAN_OPTIONS_ECL) UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -E '^(e2e_|mcp_sdk_client|mcp_python_sdk)'

run: build-run
	$(EMACS) -Q -nw -L elisp -l sly-agent-q-autoloads -l sly-agent-q -f sly-agent-q-load-user-init -f sly-agent-q-welcome

bench: build
	bash bench/install-peers.sh || true
	bash bench/run.sh $(BUILD_DIR)

# The README's set-up on a minimal Debian 12 made by debootstrap (10-20 min;
# needs root or sudo).  Not part of `make test'.
check-fresh:
	bash tests/fresh/check-fresh.sh

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(ASAN_DIR) $(AUTOLOADS)
