#!/bin/sh
# go-mdraid (dracut module 90mdctl): the initqueue's timeout job (at 2/3 of
# rd.retry): starts, with the members they have, the arrays that can serve
# their data (those of rd.md.uuid, or all with rd.auto=1); an array that
# cannot is named and left inactive.
type getargs >/dev/null 2>&1 || . /lib/dracut-lib.sh
MDCTL=@BINDIR@/mdctl
MDCTL_HOMEHOST=
[ ! -r /etc/mdctl.env ] || . /etc/mdctl.env
set -- "$MDCTL"
[ -z "$MDCTL_HOMEHOST" ] || set -- "$@" --homehost="$MDCTL_HOMEHOST"

uuids=$(getargs rd.md.uuid -d rd_MD_UUID=)
info "mdctl-start: the initqueue timed out: starting the arrays that can serve their data"
if [ -n "$uuids" ]; then
	list=
	for uuid in $uuids; do
		"$@" run "$uuid" 2>&1 | vinfo
		list=${list:+$list,}$uuid
	done
	"$@" assemble --scan --run --uuid="$list" 2>&1 | vinfo
elif getargbool 0 rd.auto; then
	"$@" run --scan 2>&1 | vinfo
	"$@" assemble --scan --run 2>&1 | vinfo
fi
# Tell the initqueue to look again.
: >"$hookdir/initqueue/work"
