#!/usr/bin/env bash
# Compares `mdctl examine` with `mdadm --examine` over the same member
# images (default 1,000, made from the real captures in testdata/fixtures),
# in one run: each command gets all images in one call, and the calls
# alternate for several rounds. mdadm reads image files without the md
# driver. Needs mdadm (scripts/vm-deps installs it).
#
#   bench/examine.sh [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
rounds=${2:-5}
command -v mdadm >/dev/null || { echo "bench/examine.sh: needs mdadm (run scripts/vm-deps)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/img"
go run ./bench/mkimages -n "$n" -out "$work/img"
go build -o "$work/mdctl" ./cmd/mdctl
mapfile -t imgs < <(ls "$work"/img/*.img)

now() { date +%s%N; }
best_mdadm=0 best_mdctl=0 sum_mdadm=0 sum_mdctl=0
for r in $(seq "$rounds"); do
	t0=$(now); mdadm --examine "${imgs[@]}" >"$work/mdadm.out" 2>&1 || true; t1=$(now)
	"$work/mdctl" examine "${imgs[@]}" >"$work/mdctl.out" 2>&1 || true; t2=$(now)
	a=$(((t1 - t0) / 1000)) c=$(((t2 - t1) / 1000))
	sum_mdadm=$((sum_mdadm + a)) sum_mdctl=$((sum_mdctl + c))
	if [ "$best_mdadm" = 0 ] || [ "$a" -lt "$best_mdadm" ]; then best_mdadm=$a; fi
	if [ "$best_mdctl" = 0 ] || [ "$c" -lt "$best_mdctl" ]; then best_mdctl=$c; fi
	echo "round $r: mdadm --examine ${a} us, mdctl examine ${c} us"
done
# Both must have seen every image.
[ "$(grep -c '^ *Magic : a92b4efc' "$work/mdadm.out")" = "$n" ] || { echo "mdadm did not examine all $n images" >&2; exit 1; }
[ "$(grep -c '^ *Magic : a92b4efc' "$work/mdctl.out")" = "$n" ] || { echo "mdctl did not examine all $n images" >&2; exit 1; }
echo "images: $n, rounds: $rounds, $(mdadm --version 2>&1)"
echo "mdadm --examine: best $((best_mdadm / 1000)) ms, mean $((sum_mdadm / rounds / 1000)) ms"
echo "mdctl examine:   best $((best_mdctl / 1000)) ms, mean $((sum_mdctl / rounds / 1000)) ms"
awk -v a="$sum_mdadm" -v c="$sum_mdctl" 'BEGIN { printf "ratio mdctl/mdadm (mean): %.2f\n", c / a }'
