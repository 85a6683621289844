#!/bin/sh
# Measures the slot-safe replace on the real kernel (VM rig): the time
# of md.ExecuteReplace (lock, re-read and re-plan, then the steps; not the
# rebuild) for each array kind, and mdadm --add on the same case. Prints
# the PERF lines of the md guest tests (TestVMReplaceProofs,
# TestVMHotReplace, TestVMReplacePerformance).
#
# Usage: bench/replace-vm.sh   (needs what scripts/vm-deps installs)
set -eu
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
MDRAID_VMTEST=1 go test -count=1 -run 'TestGuestPackages/^md$' -v ./internal/vmtest >"$log" 2>&1 || {
	tail -50 "$log"
	exit 1
}
grep 'PERF' "$log" | sed 's/.*guest: *//'
