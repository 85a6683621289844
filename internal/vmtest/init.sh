#!/bin/busybox sh
# PID 1 of the go-mdraid test VM (internal/vmtest). The host adds
# /vmtest/env (variables) and /vmtest/cmd (the command) to the initramfs.
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /dev/disk/by-path /dev/disk/by-id
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /run/mdadm /etc/mdadm
hostname vmtest
echo 1 > /proc/sys/kernel/sysrq
export LD_LIBRARY_PATH=$(cat /vmtest/ld-library-path)
. /vmtest/env

# VMTEST_NOLOAD names modules (file names without .ko) to leave for the
# kernel to request, through modprobe and the filtered modules.alias.
for m in $(cat /vmtest/modules); do
	b=${m##*/}
	case " $VMTEST_NOLOAD " in *" ${b%.ko} "*) continue;; esac
	insmod "$m" || echo "vmtest: insmod $m failed"
done

# Wait for the scratch disks; probing is asynchronous.
n=0
while [ "$(ls /sys/block | grep -c '^vd')" -lt "${VMTEST_DISKS:-0}" ]; do
	n=$((n + 1))
	if [ $n -gt 200 ]; then
		echo "vmtest: only $(ls /sys/block | grep -c '^vd') of $VMTEST_DISKS disks appeared"
		break
	fi
	sleep 0.05
done

# What udev would do: by-path (pci-<address> of the virtio device's PCI
# function) and by-id (virtio-<serial>) links.
for b in /sys/block/vd*; do
	[ -e "$b" ] || continue
	d=${b##*/}
	p=$(readlink -f "$b/device/..")
	ln -sf "../../$d" "/dev/disk/by-path/pci-${p##*/}"
	s=$(cat "$b/serial" 2>/dev/null)
	[ -n "$s" ] && ln -sf "../../$d" "/dev/disk/by-id/virtio-$s"
done

# Shares: "tag:dir:ro|rw" words.
for s in $VMTEST_SHARES; do
	tag=${s%%:*}; rest=${s#*:}; dir=${rest%:*}; mode=${rest##*:}
	mkdir -p "$dir"
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,cache=none,$mode" "$tag" "$dir" ||
		echo "vmtest: mount 9p $tag on $dir failed"
done

echo "vmtest: guest ready"
(. /vmtest/cmd) </dev/null
rc=$?
cd /
sync
for s in $VMTEST_SHARES; do
	rest=${s#*:}; umount "${rest%:*}" 2>/dev/null
done
echo "MDRAID-VMTEST-EXIT $VMTEST_NONCE rc=$rc"
poweroff -f
