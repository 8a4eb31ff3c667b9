# sly-agent-q — `make run' and `make test' are all a fresh Debian machine needs.

BUILD_DIR ?= build
EMACS ?= emacs
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_BUILD_TYPE ?= RelWithDebInfo

# Debian packages the build and the tests need.
DEB_PACKAGES = emacs-nox ecl libecl-dev nlohmann-json3-dev libgtest-dev libgc-dev libgmp-dev cmake g++ make tmux cl-alexandria curl
# Node, for the MCP test with the official SDK (tests/mcp): Debian's, unless
# a node and an npm are on the PATH already (NodeSource's nodejs carries
# npm and conflicts with Debian's npm package).
NODE_PACKAGES = nodejs npm
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build test test-core test-elisp run bench check-fresh clean

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

$(BUILD_DIR)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)

build: deps $(BUILD_DIR)/Makefile
	cmake --build $(BUILD_DIR) -j $(JOBS)
	$(EMACS) -Q --batch -L elisp --eval '(setq byte-compile-error-on-warn t load-prefer-newer t)' -f batch-byte-compile elisp/*.el

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-elisp

test-elisp:
	$(EMACS) -Q --batch -L elisp -L tests/elisp -l tests/elisp/run-tests.el

run: build
	$(EMACS) -Q -nw -L elisp -l sly-agent-q -f sly-agent-q-welcome

bench: build
	bash bench/install-peers.sh || true
	bash bench/run.sh $(BUILD_DIR)

# The README's set-up on a minimal Debian 12 made by debootstrap (10-20 min;
# needs root or sudo).  Not part of `make test'.
check-fresh:
	bash tests/fresh/check-fresh.sh

clean:
	rm -rf $(BUILD_DIR)
