#!/bin/sh
# Install the Debian packages the peers of `make bench` need (idempotent):
# bench/slime-peer.el's SBCL and SLIME, cl-mcp-server's libraries.
#
#   sbcl      - Steel Bank Common Lisp (/usr/bin/sbcl)
#   slime     - SLIME's Emacs side: /usr/share/emacs/site-lisp/elpa/slime-*/slime.el(c)
#               (byte-compiled at install time; source in .../elpa-src/slime-*/)
#   cl-swank  - SLIME's Lisp side (swank): /usr/share/common-lisp/source/slime/
#               swank-loader.lisp.  `slime' only *Recommends* it, so list it.
#   cl-yason cl-bordeaux-threads cl-trivial-gray-streams cl-trivial-backtrace
#   cl-alexandria
#             - what cl-mcp-server (github.com/quasi/cl-mcp-server, in neither
#               Debian nor npm) loads from, up to its commit 3e6319c (later
#               ones need its cl-mcp library): bench/mcp_tail measures it when
#               CL_MCP_SERVER_DIR names a checkout (a627373 loads on Debian
#               12's SBCL 2.2.9; later ones use SB-EXT:*GC-REAL-TIME*).
#
# Exit 0 when all of them are installed afterwards, non-zero otherwise.
set -u

PKGS="sbcl slime cl-swank cl-yason cl-bordeaux-threads cl-trivial-gray-streams cl-trivial-backtrace cl-alexandria"

is_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-peers: dpkg/apt-get not found; this script needs Debian/Ubuntu." >&2
    echo "install-peers: install SBCL and SLIME (with swank) by other means." >&2
    exit 2
fi

missing=""
for p in $PKGS; do
    is_installed "$p" || missing="$missing $p"
done

if [ -z "$missing" ]; then
    echo "install-peers: already installed: $PKGS"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-peers: missing:$missing; not root and sudo is not available." >&2
    exit 3
fi

echo "install-peers: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# Run as a plain command (no `env`) so sudo keeps DEBIAN_FRONTEND via -E
# where allowed; apt-get -y is non-interactive anyway.
if ! $SUDO ${SUDO:+-E} apt-get update -q; then
    echo "install-peers: apt-get update failed." >&2
fi
# shellcheck disable=SC2086
if ! $SUDO ${SUDO:+-E} apt-get install -y -q --no-install-recommends $missing; then
    echo "install-peers: apt-get install failed for:$missing" >&2
fi

still=""
for p in $PKGS; do
    is_installed "$p" || still="$still $p"
done
if [ -n "$still" ]; then
    echo "install-peers: NOT installed:$still (package not available from the configured apt sources?)" >&2
    exit 1
fi
echo "install-peers: installed: $PKGS"
exit 0
