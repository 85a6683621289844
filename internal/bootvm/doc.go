// Package bootvm holds the VM tests that boot a real Debian system whose
// root file system is on an md RAID1, from an initramfs made by Debian's
// own update-initramfs with the project's initramfs-tools hook
// (contrib/initramfs-tools) and no mdadm package installed. Its tests run
// on the host under the VM rig (internal/vmtest, MDRAID_VMTEST=1); the
// Debian root comes from scripts/vm-deps (see vmtest.DebianRoot).
package bootvm
