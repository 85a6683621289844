#!/bin/sh
# go-mdraid (dracut module 90mdctl), shutdown: every array is made clean,
# then every array that can be stopped is stopped, stacked ones first (as
# dracut's mdraid runs mdadm --wait-clean --scan and --stop --scan).
_mdctl_shutdown() {
	info "mdctl: making md arrays clean"
	@BINDIR@/mdctl wait --clean --scan 2>&1 | vinfo
	info "mdctl: stopping md arrays"
	@BINDIR@/mdctl stop --scan 2>&1 | vinfo
	if [ -n "$1" ]; then
		info "/proc/mdstat:"
		vinfo </proc/mdstat
	fi
}
_mdctl_shutdown "$1"
