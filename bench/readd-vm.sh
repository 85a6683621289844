#!/bin/sh
# Measures a member's return on the real kernel (VM rig): the time from
# the re-add to a clean array, with a write-intent bitmap (md copies what
# changed) and without one (a full rebuild), for mdctl re-add and for
# mdadm (--re-add, or --add where md will not re-add) on the same array
# and the same writes. Prints the PERF lines of TestVMReAdd.
#
# Usage: bench/readd-vm.sh   (needs what scripts/vm-deps installs;
# MDRAID_VM_KERNEL picks the kernel)
set -eu
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
MDRAID_VMTEST=1 MDRAID_VM_RUN=ReAdd go test -count=1 -run 'TestGuestPackages/^md$' -v ./internal/vmtest >"$log" 2>&1 || {
	grep -q 'PASS: TestVMReAdd' "$log" || { tail -50 "$log"; exit 1; }
}
grep 'PERF re-add' "$log" | sed 's/.*guest: *//'
