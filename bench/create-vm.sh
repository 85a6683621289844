#!/bin/sh
# Times array creation on the real kernel (VM rig): mdctl create against
# mdadm --create --run on the same disks, a 2-disk mirror with an
# internal bitmap and a 4-disk raid5 (metadata 1.2), three rounds each,
# until the command returns (the initial sync runs after). mdctl runs in
# the test process (no process start); mdadm is a process. Between
# rounds the disks are retired with mdctl zero-superblock. Prints the
# PERF lines of TestVMCreateAndRetireCLI.
#
# Usage: bench/create-vm.sh   (needs what scripts/vm-deps installs;
# MDRAID_VM_KERNEL picks the kernel)
set -eu
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
MDRAID_VMTEST=1 MDRAID_VM_RUN=CreateAndRetire go test -count=1 -run 'TestGuestPackages/^cmd/mdctl$' -v ./internal/vmtest >"$log" 2>&1 || {
	grep -q 'PASS: TestVMCreateAndRetireCLI' "$log" || { tail -50 "$log"; exit 1; }
}
grep 'PERF create' "$log" | sed 's/.*guest: *//'
