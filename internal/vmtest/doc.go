// Package vmtest boots the host's Debian kernel in QEMU with a tiny
// initramfs so that tests can drive real Linux MD arrays on machines that
// have no md driver (developer laptops, CI containers).
//
// # The guest
//
// The initramfs holds the kernel's md, virtio and 9p modules (with their
// dependencies, loaded in order from modules.dep), busybox-static, mdadm
// with its shared libraries, an init script and whatever files a boot asks
// for. Init mounts proc, sysfs, devtmpfs and tmpfs, loads the modules
// (except those named in the boot's VMTEST_NOLOAD variable, which the
// kernel then asks modprobe for through a filtered modules.alias),
// waits for the scratch disks, creates /dev/disk/by-path and by-id links
// (there is no udev unless a boot brings one, see [ProgramFiles]), mounts
// the 9p shares, runs one command with stdin
// from /dev/null, prints an exit marker carrying a per-boot nonce and the
// command's status, and powers off.
//
// Each scratch disk is a raw image attached as virtio-blk-pci at a fixed
// PCI address, 0000:00:(0x10+Slot).0 on bus pci.0, with serial
// "mdtest-<Slot>" unless told otherwise. A disk therefore keeps its
// by-path name (pci-0000:00:10.0, ...) across boots, and moving an image
// to another slot moves it to another "port".
//
// # Getting files out
//
// The module root is shared read-only over virtio-9p at /src, and the
// guest command starts in the directory of the package under test, so
// testdata/ is readable. A Config may add writable shares (Share); the
// fixture generator writes its output through one.
//
// # Host side
//
// [Rig] finds the kernel (a kernel of the matrix that scripts/vm-deps
// unpacks into the cache, see [Matrix], or one under /boot; vmlinux is
// extracted once per kernel into the cache), checks for qemu and builds
// the base initramfs. md personality modules the kernel lacks are listed
// in [Rig.Missing]; tests that need one call [Rig.RequireModules] (host) or
// guest.RequireLevel (guest), which skip loudly.
// [Rig.Boot] starts one VM and [VM.Wait] (or [Rig.Run]) waits for the
// exit marker. A kernel panic, a missing marker, a timeout or a non-zero
// status is an error; nothing short of the marker with status 0 passes.
// At most one VM per host CPU runs at a time ([Jobs]; a VM with more
// vCPUs counts as many): boots take file locks in the cache directory.
//
// [VM.QMP], [VM.AddDisk] and [VM.RemoveDisk] talk to QEMU's QMP monitor
// (Config.Monitor) to hot-plug disks at a chosen slot while the guest runs;
// [VM.Expect] waits for a line on the guest console to synchronise.
//
// Host tests call [NewTestRig], which skips unless MDRAID_VMTEST=1, and
// fails instead of skipping when CI=true and QEMU or the kernel is missing.
// TestGuestPackages boots one VM per package that has "//go:build vmtest"
// test files and runs its test binary there; guest code uses package
// internal/vmtest/guest.
//
// # Environment
//
//	MDRAID_VMTEST=1           enable VM tests
//	MDRAID_VM_ACCEL=kvm       use KVM instead of TCG (default tcg)
//	MDRAID_VM_KERNEL=<k>      kernel to boot: a matrix label or version, or a version under /boot
//	MDRAID_VM_CACHE=<dir>     cache directory (default $XDG_CACHE_HOME/go-mdraid-vm)
//	MDRAID_VM_QEMU=<path>     qemu-system-x86_64 binary
//	MDRAID_VM_JOBS=<n>        VMs of one vCPU that may run at once on this host (default: its CPUs)
package vmtest
