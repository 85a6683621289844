#!/bin/bash
# go-mdraid: dracut module that assembles md arrays with mdctl, with no
# mdadm in the initramfs. Installed by scripts/install-contrib (which
# substitutes @BINDIR@) into /usr/lib/dracut/modules.d/90mdctl. It honours
# dracut's own md parameters as its mdraid module does:
#
#   rd.md=0            no md assembly at all
#   rd.md.uuid=U       assemble only these arrays (several allowed); with
#                      neither rd.md.uuid nor rd.auto=1, none (dracut's rule;
#                      a host-only image writes rd.md.uuid for the arrays the
#                      host needs)
#   rd.auto=1          assemble every array
#   rd.md.waitclean=1  wait for resync/recovery before mounting (mdctl wait)
#   rd.retry=N         the initqueue's timeout: at 2/3 of it (120 s by
#                      default) arrays that can serve their data start
#                      degraded (mdctl run, mdctl assemble --scan --run)
#
# At shutdown (dracut's shutdown hook) every array is made clean and
# stopped: mdctl wait --clean --scan, mdctl stop --scan.

# called by dracut
check() {
	local dev
	require_binaries @BINDIR@/mdctl || return 1
	[[ $hostonly ]] || [[ $mount_needs ]] && {
		for dev in "${!host_fs_types[@]}"; do
			[[ ${host_fs_types[$dev]} == linux_raid_member ]] && return 0
		done
		return 255
	}
	return 0
}

# called by dracut
depends() {
	echo rootfs-block
	return 0
}

# called by dracut
installkernel() {
	instmods '=drivers/md'
}

# called by dracut: rd.md.uuid for every array the host's file systems
# need.
cmdline() {
	local dev uuid
	declare -A seen
	for dev in "${!host_fs_types[@]}"; do
		[[ ${host_fs_types[$dev]} == linux_raid_member ]] || continue
		uuid=$(@BINDIR@/mdctl examine --export "$dev" 2>/dev/null | sed -n 's/^MD_UUID=//p' | head -n 1)
		[[ $uuid ]] || continue
		[[ ${seen[$uuid]} ]] && continue
		seen[$uuid]=1
		printf ' rd.md.uuid=%s' "$uuid"
	done
}

# called by dracut
install() {
	local conf homehost hostflag dir rule
	inst @BINDIR@/mdctl
	inst_multiple sed

	if [[ $hostonly_cmdline == "yes" ]]; then
		conf=$(cmdline)
		[[ $conf ]] && printf '%s\n' "$conf" >>"${initdir}/etc/cmdline.d/90mdctl.conf"
	fi

	# In the initramfs the kernel has no host name yet: without the
	# system's, every array would look foreign and get a foreign name.
	homehost=
	if [[ -r $dracutsysrootdir/etc/hostname ]]; then
		read -r homehost <"$dracutsysrootdir/etc/hostname" || true
	fi
	[[ $homehost =~ ^[A-Za-z0-9._-]+$ ]] || homehost=
	hostflag=
	[[ $homehost ]] && hostflag="--homehost=$homehost "
	printf 'MDCTL=%s\nMDCTL_HOMEHOST=%s\n' @BINDIR@/mdctl "$homehost" >"${initdir}/etc/mdctl.env"

	# The array rules (links /dev/md/NAME, md-uuid-*), as installed; the
	# incremental rule is this module's own (rd.md, rd.md.uuid).
	inst_dir /etc/udev/rules.d
	for dir in /etc/udev/rules.d /usr/lib/udev/rules.d /lib/udev/rules.d; do
		rule=$dracutsysrootdir$dir/63-mdctl-raid-arrays.rules
		if [[ -f $rule ]]; then
			inst_simple "$rule" /etc/udev/rules.d/63-mdctl-raid-arrays.rules
			break
		fi
	done
	sed "s|@BINDIR@/mdctl incremental|@BINDIR@/mdctl ${hostflag}incremental|" "$moddir/65-mdctl-incremental.rules" \
		>"${initdir}/etc/udev/rules.d/65-mdctl-incremental.rules"

	inst_hook pre-trigger 30 "$moddir/parse-mdctl.sh"
	inst_hook pre-mount 10 "$moddir/mdctl-waitclean.sh"
	inst_hook cleanup 99 "$moddir/mdctl-needshutdown.sh"
	inst_hook shutdown 30 "$moddir/mdctl-shutdown.sh"
	inst_script "$moddir/mdctl-start.sh" /sbin/mdctl-start
	dracut_need_initqueue
}
