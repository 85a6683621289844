#!/bin/sh
# go-mdraid (dracut module 90mdctl), cleanup: an md array is running, so
# the shutdown hooks are needed at power-off.
type getarg >/dev/null 2>&1 || . /lib/dracut-lib.sh
for md in /dev/md[0-9_]*; do
	[ -b "$md" ] || continue
	need_shutdown
	break
done
