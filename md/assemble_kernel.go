package md

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/sysfs"
)

// assembly is everything assemble, incremental and stop change on the
// system: md devices (created, given members, started, stopped), their
// nodes and /dev/md/NAME links, and kernel partitions of members. Like
// kernel for replace, it is the one door to the system, so that host
// tests record the exact calls.
type assembly interface {
	// NewArray creates the empty md device name ("md127") through
	// md_mod's new_array parameter.
	NewArray(name string) error
	// SetArrayInfo issues SET_ARRAY_INFO with only the superblock
	// version, on the array's node.
	SetArrayInfo(array string, major, minor int) error
	// AddDisk binds block device dev to the array (ADD_NEW_DISK; on an
	// array that is not running the kernel takes everything from the
	// superblock).
	AddDisk(array string, dev sysfs.DevNum) error
	// Start starts an assembled array: RUN_ARRAY when readAuto is false,
	// else array_state=read-auto.
	Start(array string, readAuto bool) error
	// StopArray issues STOP_ARRAY on a descriptor of the array opened
	// O_EXCL, which fails with EBUSY when the array is mounted or held.
	StopArray(array string) error
	// SetSlot and WriteState write md/dev-MEMBER/slot and state.
	SetSlot(array, member string, slot int) error
	WriteState(array, member string, cmd sysfs.MemberCommand) error
	// Uevent writes "change" to /sys/block/ARRAY/uevent.
	Uevent(array string) error
	// DeletePartitions removes the kernel's partitions of a member
	// device (path under the device root) through an O_EXCL descriptor;
	// it returns the numbers removed.
	DeletePartitions(path string) ([]int, error)
	// MakeNode creates the block node path for dev (mode 0600) unless a
	// block node for dev is there; anything else there is an error.
	MakeNode(path string, dev sysfs.DevNum) error
	// MakeLink creates the symbolic link link -> target, and the
	// directory holding it (0700); an existing entry is an error
	// matching fs.ErrExist and is left alone.
	MakeLink(link, target string) error
	// RemoveLink removes link if it is a symbolic link whose target text
	// is target; anything else is left alone (and not an error).
	RemoveLink(link, target string) (bool, error)
	// SetModuleParameter writes an md_mod parameter.
	SetModuleParameter(name, val string) error
}

// NewArray writes new_array. When md_mod is not loaded there is no
// new_array: as mdadm falls back to, it then opens the array's node
// (made if missing), which makes the kernel load md_mod (the block-major-9
// module alias) and create the device (md.c md_probe).
func (k sysKernel) NewArray(name string) error {
	err := k.fs.NewArray(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	n, aerr := strconv.Atoi(strings.TrimPrefix(name, "md"))
	if aerr != nil || n < 0 || n >= 512 {
		return err
	}
	node := filepath.Join(k.devRoot, name)
	if merr := k.MakeNode(node, sysfs.DevNum{Major: 9, Minor: uint32(n)}); merr != nil {
		return fmt.Errorf("md: no new_array (%w), and no node to open: %w", err, merr)
	}
	open := k.openFile
	if open == nil {
		open = os.OpenFile
	}
	f, oerr := open(node, os.O_RDONLY, 0)
	if oerr != nil {
		return fmt.Errorf("md: no new_array (md_mod not loaded?), and opening %s to create the array failed: %w", node, oerr)
	}
	f.Close()
	if _, serr := os.Stat(k.fs.Path("block", name)); serr != nil {
		return fmt.Errorf("md: opening %s did not create %s: %w", node, name, serr)
	}
	return nil
}

// SetArrayInfo issues SET_ARRAY_INFO.
func (k sysKernel) SetArrayInfo(array string, major, minor int) error {
	return k.withDevice(array, func(d *ioctl.Device) error {
		return d.SetArrayInfo(ioctl.ArrayInfo{MajorVersion: int32(major), MinorVersion: int32(minor)})
	})
}

// AddDisk issues ADD_NEW_DISK.
func (k sysKernel) AddDisk(array string, dev sysfs.DevNum) error { return k.AddNewDisk(array, dev) }

// Start issues RUN_ARRAY or writes array_state=read-auto.
//
// The kernel starts an array with its level's personality, which md_run
// asks modprobe for (md-level-N) and then looks up; if the module is not
// registered yet, the start fails with EINVAL ("personality for level N
// is not loaded"). A modprobe that sees the module already listed in
// /proc/modules while another start's load of it is still running its
// init (busybox's does: an initramfs) returns at once, so arrays started
// at the same time as the one that loads the personality can fail so
// (seen on 7.2 when Assemble starts arrays at the same time, with md_mod
// and raid1 not loaded). When a start fails with EINVAL and /proc/mdstat
// does not list the array's personality, Start waits for it (for
// persWait at most) and starts once more: the failed lookup changed
// nothing that keeps a second start from working.
func (k sysKernel) Start(array string, readAuto bool) error {
	err := k.start(array, readAuto)
	if !errors.Is(err, unix.EINVAL) || k.procRoot == "" {
		return err
	}
	pers := k.personality(array)
	if pers == "" || personalityListed(k.procRoot, pers) {
		return err
	}
	for deadline := time.Now().Add(persWait); time.Now().Before(deadline); {
		time.Sleep(persPoll)
		if personalityListed(k.procRoot, pers) {
			if err2 := k.start(array, readAuto); err2 != nil {
				return fmt.Errorf("%w (once more after the %s personality was registered: %w)", err, pers, err2)
			}
			return nil
		}
	}
	return fmt.Errorf("%w (the %s personality is not registered: /proc/mdstat does not list it)", err, pers)
}

// How long Start waits for a personality being loaded, and how often it
// looks.
const (
	persWait = 2 * time.Second
	persPoll = 20 * time.Millisecond
)

func (k sysKernel) start(array string, readAuto bool) error {
	if !readAuto {
		return k.RunArray(array)
	}
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.SetState(sysfs.StateReadAuto)
}

// personality returns the name /proc/mdstat gives the personality of
// the array's level ("raid1"), or "" when it cannot be told. An array
// that is not running shows its level as a bare number ("1").
func (k sysKernel) personality(array string) string {
	a, err := k.fs.Array(array)
	if err != nil {
		return ""
	}
	l, err := a.Level()
	if err != nil {
		return ""
	}
	return personalityName(string(l))
}

// personalityName maps a level as md/level shows it, a name or a bare
// number, to the personality's name in /proc/mdstat.
func personalityName(level string) string {
	switch level {
	case "-1", "linear":
		return "linear"
	case "0", "1", "4", "5", "6", "10":
		return "raid" + level
	case "raid0", "raid1", "raid4", "raid5", "raid6", "raid10":
		return level
	}
	return ""
}

// personalityListed reports whether the "Personalities :" line of
// /proc/mdstat below procRoot lists pers ("[raid1]").
func personalityListed(procRoot, pers string) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, "mdstat"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Personalities :"); ok {
			return slices.Contains(strings.Fields(rest), "["+pers+"]")
		}
	}
	return false
}

// StopArray opens the array O_RDONLY|O_EXCL, as mdadm does, and issues
// STOP_ARRAY on that descriptor.
func (k sysKernel) StopArray(array string) error {
	p := filepath.Join(k.devRoot, array)
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		return err
	}
	d := ioctl.NewDevice(f)
	defer d.Close()
	return d.StopArray()
}

// Uevent writes change to the array's uevent.
func (k sysKernel) Uevent(array string) error {
	a, err := k.fs.Array(array)
	if err != nil {
		return err
	}
	return a.Uevent("change")
}

// DeletePartitions opens path O_RDONLY|O_EXCL and deletes partitions 1
// to 15 (mdadm deletes 0 to 15; 0 is never a partition).
func (k sysKernel) DeletePartitions(path string) ([]int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	done, err := ioctl.DeletePartitions(f, 15)
	if errors.Is(err, unix.EINVAL) {
		// A partition, or a device that has no partition table
		// support: nothing to delete.
		return done, nil
	}
	return done, err
}

// MakeNode mknods path as a block device for dev, mode 0600 (mdadm's
// default without mdadm.conf), unless a block node for dev is there.
func (k sysKernel) MakeNode(path string, dev sysfs.DevNum) error {
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if err == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == mkdev(dev) {
			return nil
		}
		return fmt.Errorf("md: %s exists but is not the block device %v: %w", path, dev, fs.ErrExist)
	}
	if !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if err := unix.Mknod(path, unix.S_IFBLK|0o600, int(mkdev(dev))); err != nil {
		return &fs.PathError{Op: "mknod", Path: path, Err: err}
	}
	return nil
}

// MakeLink creates link -> target (and its directory, 0700, as mdadm
// makes /dev/md).
func (k sysKernel) MakeLink(link, target string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return err
	}
	return os.Symlink(target, link)
}

// RemoveLink removes link if it is a symlink whose text is target.
func (k sysKernel) RemoveLink(link, target string) (bool, error) {
	got, err := os.Readlink(link)
	if err != nil || got != target {
		return false, nil
	}
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// SetModuleParameter writes an md_mod parameter.
func (k sysKernel) SetModuleParameter(name, val string) error {
	return k.fs.SetModuleParameter(name, val)
}

// linkName is mdadm's link name for an array name (mdopen.c: '/' -> '-',
// space and tab -> '_', at most 200 bytes), checked by SafeName: a name
// SafeName refuses gets no link.
func linkName(name string) (string, error) {
	s, err := SafeName(name)
	if err != nil {
		return "", err
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s, nil
}
