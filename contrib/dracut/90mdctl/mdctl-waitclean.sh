#!/bin/sh
# go-mdraid (dracut module 90mdctl), pre-mount: with rd.md.waitclean=1,
# wait until no resync or recovery runs (as mdadm -W in dracut's mdraid).
if getargbool 0 rd.md.waitclean; then
	info "mdctl: waiting for md arrays to finish syncing"
	@BINDIR@/mdctl wait --scan 2>&1 | vinfo
fi
