#!/usr/bin/env bash
# make check-fresh: the README's set-up, run exactly as written on a
# minimal Debian 12 (debootstrap --variant=minbase) with nothing but git
# added, from a clone of the committed HEAD.  Needs root (or sudo), and
# reaches only the Debian mirror this machine's apt already uses.  Not part
# of `make test': it takes 10-20 minutes.
#
#   bash tests/fresh/check-fresh.sh
#
# Prints the last lines of `make test' and what `make run' showed in tmux;
# exits 0 when both worked.  Every mount is undone on exit.

set -u
cd "$(dirname "$0")/../.."
repo=$PWD
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
suite=bookworm

fail() { echo "check-fresh: $*" >&2; exit 1; }

# The README's set-up commands: the lines of its "sh" block that start with
# `apt-get` or `make test`, taken from the README itself so that what is
# checked is what it says.
setup=$(awk '/^```sh/ { inside = 1; next } /^```/ { inside = 0 } inside' README.md | sed 's/[[:space:]]*#.*//' |
        grep -E '^(sudo )?apt-get|^make test$' | sed 's/sudo //g')
[ -n "$setup" ] || fail "README.md has no set-up commands in a sh block"
grep -qx 'make test' <<<"$setup" || fail "README.md's sh block does not run make test"

mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "'"$suite"'" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt"

command -v debootstrap >/dev/null || $SUDO apt-get install -y -qq debootstrap >/dev/null ||
  fail "cannot install debootstrap"

root=$(mktemp -d /var/tmp/sly-agent-q-fresh.XXXXXX)
mounted=()
cleanup() {
  local i
  $SUDO chroot "$root" tmux kill-server >/dev/null 2>&1
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do $SUDO umount -l "${mounted[i]}" 2>/dev/null; done
  # Only once nothing is mounted under it.
  if ! grep -q " $root/" /proc/mounts; then $SUDO rm -rf "$root"; fi
}
trap cleanup EXIT
mount_in() {  # TYPE-OR-BIND SOURCE TARGET
  $SUDO mkdir -p "$root$3"
  if [ "$1" = bind ]; then $SUDO mount --bind "$2" "$root$3"; else $SUDO mount -t "$1" "$2" "$root$3"; fi &&
    mounted+=("$root$3")
}

echo "== debootstrap --variant=minbase $suite from $mirror"
$SUDO debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -n 20 "$root.log"; fail "debootstrap failed"; }
rm -f "$root.log"
mount_in proc proc /proc && mount_in sysfs sys /sys && mount_in bind /dev /dev && mount_in devpts devpts /dev/pts ||
  fail "cannot mount /proc, /sys, /dev"
$SUDO cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null

in_root() { $SUDO chroot "$root" /usr/bin/env -i HOME=/root TERM=xterm-256color LANG=C.UTF-8 \
              PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"; }

echo "== git, as the user brings it, and a clone of HEAD"
in_root "apt-get update -qq && apt-get install -y -qq --no-install-recommends git ca-certificates >/dev/null" ||
  fail "cannot install git in the fresh root"
$SUDO git clone -q "$repo" "$root/root/sly-agent-q" || fail "cannot clone HEAD"

echo "== the README's commands:"
sed 's/^/   /' <<<"$setup"
status=0
joined=$(awk 'NR > 1 { printf " && " } { printf "%s", $0 }' <<<"$setup")
in_root "cd /root/sly-agent-q && $joined" >"$root/make-test.log" 2>&1 || status=$?
echo "== make test: exit $status; its last lines:"
grep -E 'tests passed|tests failed|^Ran [0-9]+ tests|unexpected|passed, [0-9]+ failed' "$root/make-test.log" | tail -n 6
[ "$status" = 0 ] || { tail -n 40 "$root/make-test.log"; fail "make test failed in the fresh root"; }

echo "== make run, in tmux"
in_root "cd /root/sly-agent-q && tmux new-session -d -s fresh -x 100 -y 30 'make run'" || fail "cannot start tmux"
shown=""
for _ in $(seq 120); do
  sleep 1
  shown=$(in_root "tmux capture-pane -p -t fresh" 2>/dev/null)
  grep -q 'sly-agent-q — Common Lisp' <<<"$shown" && break
done
sed -n '1,6p' <<<"$shown"
grep -q 'sly-agent-q — Common Lisp' <<<"$shown" || fail "make run did not show the welcome buffer"
echo "check-fresh: passed (make test and make run on a minimal Debian $suite)"
