#!/usr/bin/env bash
# Compares `mdctl examine` with `mdadm --examine` and with the read limit
# over the same member images (default 1,000, made from the real captures
# in testdata/fixtures), in one run: each command gets all images in one
# call, and the three calls alternate (in an order that turns each round)
# for several rounds. It prints each
# round, then the median (and mean) of the rounds for each, and the
# ratios of the medians mdctl/mdadm and mdctl/limit. mdadm reads image
# files without the md driver. Needs mdadm (scripts/vm-deps installs it).
#
#   bench/examine.sh [N] [ROUNDS]
#
# The read limit (bench/readlimit) is the I/O examine cannot avoid, and
# nothing else: per image open, size (lseek to the end), the reads below,
# close; no parsing, no output. Examine must look at every superblock
# location, since a device can hold several superblocks (stale ones
# included) and mdadm's choice among them needs all: 1.1 at byte 0, 1.2
# at byte 4096, 1.0 at ((sectors-16) &^ 7) sectors (8 to 12 KiB before
# the end) and 0.90 at the last 64 KiB boundary minus 64 KiB (64 to 128
# KiB before the end), 4 KiB each. 1.1 and 1.2 are adjacent, so they are
# one 8 KiB read: one I/O instead of two and no byte more (on this
# project's 2-core VM over 1,000 images: about 200 ms against 260 ms
# with two workers). The 1.0 and 0.90 blocks start 56 to 116 KiB apart,
# so one read of both would read 52 to 112 KiB that nothing needs, and
# was measured no faster: they stay two 4 KiB reads. So 16 KiB in three
# reads per image (readlimit -split reads 1.1 and 1.2 apart, to compare). The reads use
# O_DIRECT, as examine's do (blockdev.OpenDirect: md writes superblocks
# past the page cache; on an image file whose file system refuses
# O_DIRECT both fall back to buffered reads), and run on as many workers
# as examine's (4 per CPU: the time is mostly waiting for the device).
# What examine reads beyond that is what it prints: the bitmap, bad-block
# log or PPL a superblock announces (one 4 KiB read for about 8% of the
# images here).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
rounds=${2:-5}
command -v mdadm >/dev/null || { echo "bench/examine.sh: needs mdadm (run scripts/vm-deps)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/img"
go run ./bench/mkimages -n "$n" -out "$work/img"
# Written back now: an O_DIRECT read of a dirty range waits for its
# write-back, which would burden whoever reads first.
sync
go build -o "$work/mdctl" ./cmd/mdctl
go build -o "$work/readlimit" ./bench/readlimit
mapfile -t imgs < <(ls "$work"/img/*.img)

now() { date +%s%N; }
: >"$work/times"
# One call of each, timed in microseconds into $work/times.
run() {
	local t0 t1
	t0=$(now)
	case $1 in
	mdadm) mdadm --examine "${imgs[@]}" >"$work/mdadm.out" 2>&1 || true ;;
	mdctl) "$work/mdctl" examine "${imgs[@]}" >"$work/mdctl.out" 2>&1 || true ;;
	limit) "$work/readlimit" "${imgs[@]}" 2>"$work/limit.out" ;;
	esac
	t1=$(now)
	echo "$1 $(((t1 - t0) / 1000))" >>"$work/times"
}
# The order turns each round, so that each follows each of the others
# as often (what ran just before changes what is cached).
order=(mdadm mdctl limit)
for r in $(seq "$rounds"); do
	k=$(((r - 1) % 3))
	for i in 0 1 2; do run "${order[$(((k + i) % 3))]}"; done
	echo "round $r: $(tail -3 "$work/times" | sort | awk '{ printf "%s %d us  ", $1, $2 }')"
done
# All three must have seen every image.
[ "$(grep -c '^ *Magic : a92b4efc' "$work/mdadm.out")" = "$n" ] || { echo "mdadm did not examine all $n images" >&2; exit 1; }
[ "$(grep -c '^ *Magic : a92b4efc' "$work/mdctl.out")" = "$n" ] || { echo "mdctl did not examine all $n images" >&2; exit 1; }
grep -q "^readlimit: $n paths, $n md magics, 0 failed$" "$work/limit.out" || { echo "readlimit did not read all $n images: $(cat "$work/limit.out")" >&2; exit 1; }
echo "images: $n, rounds: $rounds, $(mdadm --version 2>&1), $(nproc) CPUs"
# The median of the rounds (the mean of the two middle ones when even).
stats() {
	awk -v k="$1" '$1 == k { print $2 }' "$work/times" | sort -n | awk '
		{ v[NR] = $1; s += $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d %d %d %d\n", m / 1000, s / NR / 1000, v[1] / 1000, v[NR] / 1000
		}'
}
read -r ma_med ma_mean ma_min ma_max < <(stats mdadm)
read -r mc_med mc_mean mc_min mc_max < <(stats mdctl)
read -r li_med li_mean li_min li_max < <(stats limit)
echo "mdadm --examine: median $ma_med ms, mean $ma_mean ms (range $ma_min-$ma_max)"
echo "mdctl examine:   median $mc_med ms, mean $mc_mean ms (range $mc_min-$mc_max)"
echo "read limit:      median $li_med ms, mean $li_mean ms (range $li_min-$li_max)"
awk -v a="$ma_med" -v c="$mc_med" -v l="$li_med" 'BEGIN {
	printf "ratio mdctl/mdadm (median): %.2f\n", c / a
	printf "ratio mdctl/limit (median): %.2f\n", c / l
}'
