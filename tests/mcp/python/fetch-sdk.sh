#!/usr/bin/env bash
# Puts the official MCP Python SDK into DIR, for the tests of
# sdk_client_test.py, and installs nothing on the system.
#
#   bash tests/mcp/python/fetch-sdk.sh DIR
#
# The SDK is Debian's package python3-mcp.  Debian 12 has no such package
# and its pydantic is 1.x (the SDK needs 2.x), and PyPI may not be
# reachable where this runs, so the SDK comes from Debian unstable with
# the Python it is built for and every library it needs: apt-get resolves
# and downloads them into DIR/apt (its own lists, its own empty dpkg
# status, Debian's archive keys of this machine to check them), and
# dpkg-deb unpacks each into DIR/root.  Nothing runs as root and no
# package script runs.  DIR/python (written last) starts that Python
# through that root's own dynamic loader and libraries, so the host's are
# never mixed in, and what it starts (the server, Emacs) is the host's as
# usual.  A second run finds DIR/python and does nothing; runs at once
# wait for each other (flock).
set -euo pipefail
dir=$(realpath -m "$1")
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ -x "$dir/python" ]; then exit 0; fi

rm -rf "$dir"
apt=$dir/apt
root=$dir/root
mkdir -p "$apt/etc/apt/apt.conf.d" "$apt/etc/apt/preferences.d" "$apt/etc/apt/sources.list.d" \
         "$apt/var/lib/apt/lists/partial" "$apt/var/cache/apt/archives/partial" "$apt/var/lib/dpkg" "$root"
: > "$apt/var/lib/dpkg/status"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$keyring] ${AGENTQ_DEBIAN_MIRROR:-http://deb.debian.org/debian} sid main" \
  > "$apt/etc/apt/sources.list"
options=(-o "Dir=$apt" -o "Dir::State::status=$apt/var/lib/dpkg/status" -o "Dir::Etc=$apt/etc/apt"
         -o APT::Architecture=amd64 -o APT::Install-Recommends=false -o Debug::NoLocking=1
         -o APT::Sandbox::User="$(id -un)" -q)
echo "fetch-sdk: Debian unstable's python3-mcp and what it needs, into $dir"
apt-get "${options[@]}" update >/dev/null
apt-get "${options[@]}" install --download-only -y python3-mcp >/dev/null
for deb in "$apt"/var/cache/apt/archives/*.deb; do
  dpkg-deb -x "$deb" "$root"
done

lib=$root/usr/lib/x86_64-linux-gnu
[ -x "$lib/ld-linux-x86-64.so.2" ] && [ -x "$root/usr/bin/python3" ] || { echo "fetch-sdk: no python3 in $root"; exit 1; }
cat > "$dir/python.tmp" <<EOF
#!/bin/sh
# Debian unstable's python3 with the MCP SDK (made by tests/mcp/python/fetch-sdk.sh).
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$root/usr/bin/python3" "\$@"
EOF
chmod +x "$dir/python.tmp"
"$dir/python.tmp" -c 'import mcp, importlib.metadata as m; print("fetch-sdk: mcp", m.version("mcp"))'
rm -rf "$apt/var/cache/apt/archives" "$apt/var/lib/apt/lists"
mv "$dir/python.tmp" "$dir/python"
