#!/usr/bin/env bash
# make bench: sly-agent-q's figures and, measured in the same run, the
# SLIME -> SBCL round trip for comparison.
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
echo "== core (C++ only)"
"$build/core_bench" || echo "core_bench failed"
echo "== Emacs -> module -> ECL"
ours=$(emacs -Q --batch -L elisp -l bench/bench.el 2>/dev/null | grep '^bench:')
echo "$ours"
echo "== peer: Emacs -> SLIME -> SBCL"
peer=$(emacs -Q --batch -l bench/slime-peer.el 2>/dev/null | grep '^peer:')
echo "$peer"
hot=$(sed -n 's/^bench: evaluate_hot median_us=\([0-9.]*\).*/\1/p' <<<"$ours")
slime=$(sed -n 's/.*hot_median_us=\([0-9.]*\).*/\1/p' <<<"$peer")
if [ -n "$hot" ] && [ -n "$slime" ]; then
  awk -v a="$slime" -v b="$hot" 'BEGIN { printf "ratio: slime_sbcl_hot_median / sly_agent_q_hot_median = %.1fx faster (target >= 45x)\n", a / b }'
else
  echo "ratio: unavailable (peer not measured)"
fi
