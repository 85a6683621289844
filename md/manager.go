package md

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Config says where Manager finds the system. The zero value, and a nil
// *Config, mean the running system.
type Config struct {
	// SysRoot is where sysfs is mounted; default "/sys".
	SysRoot string
	// DevRoot is the device directory; default "/dev". Member devices are
	// opened below it by kernel name ("vdb", "cciss/c0d0") to read their
	// superblocks. A SysRoot other than "/sys" (a capture) needs one:
	// Open refuses to read the host's /dev beside another system's sysfs.
	DevRoot string
	// RunDir holds the per-array lock files of replace; default
	// /run/mdraid. It is created if missing; one not owned by the
	// effective user or writable by group or others is refused (an error
	// matching ErrRefused: "md: unsafe run directory: ..."), since lock
	// files have predictable names.
	RunDir string
	// MountInfo is the mount table read to refuse mounted disks; default
	// /proc/self/mountinfo.
	MountInfo string
	// ReadTimeout bounds each read of a member's superblock or bitmap;
	// default 5 seconds. A member that does not answer in time is
	// reported so in its Member.Error ("md: the device did not answer:
	// ..."), and the rest of the report is filled in.
	ReadTimeout time.Duration
	// Now is the clock that dates reports and records; default
	// time.Now. Tests set it to pin the report time.
	Now func() time.Time
	// MapDir holds mdadm's map file, which assemble, incremental and
	// stop keep as mdadm does (see package md/mapfile); default
	// /run/mdadm.
	MapDir string
	// ProcRoot is where procfs is mounted; default /proc. Stop reads
	// PROCROOT/swaps and every PROCROOT/PID/fd to refuse an array used
	// as swap or open by a process.
	ProcRoot string
	// HomeHost decides which arrays are local when assembling (mdadm's
	// homehost); default the host name (os.Hostname). An array whose
	// name is not "HOMEHOST:..." (1.x), or whose UUID does not carry the
	// homehost's hash (0.90), is foreign.
	HomeHost string
	// NoUdev makes assemble create the /dev/mdN node and /dev/md/NAME
	// link itself even when udev runs (mdadm's MDADM_NO_UDEV=1). Without
	// it they are made only when udev is not running, which is decided
	// as mdadm decides it: neither DevRoot/.udev nor UdevDir exists.
	NoUdev bool
	// UdevDir is udev's run directory; default /run/udev.
	UdevDir string
}

// Manager discovers md arrays and reports and changes their state. It
// keeps no state between calls: every call reads the system afresh.
type Manager struct {
	fs      sysfs.FS
	devRoot string
	open    func(name string) (device, error)
	ops     ops // what changes the system: see primitives.go
	// reads runs member reads with a deadline; it remembers only the
	// reads still running (see readGate).
	reads *readGate
	now   func() time.Time // the clock: Config.Now
	// asm changes the system for assemble, incremental and stop.
	asm      assembly
	mapDir   string
	homeHost string
	noUdev   bool
	udevDir  string
	procRoot string // Config.ProcRoot
	// probes remembers superblocks for the length of one Assemble or
	// Incremental call (withProbes); nil otherwise.
	probes *probeCache
	// uevents, set by Assemble, collects the arrays whose change uevent
	// is written once at the end of the call instead of after each
	// device; nil otherwise.
	uevents *ueventQueue
	// dry, set for a dry run of assembly (withDryRun), is what the run
	// would have changed; nil otherwise.
	dry *dryRun
}

// device is an open block device (or, in tests, an image file).
type device interface {
	io.ReaderAt
	io.Closer
	Size() (int64, error)
}

// ErrConfig is matched by the error of Open for a Config that describes
// no one system.
var ErrConfig = errors.New("md: invalid Config")

// Open returns a Manager for the system described by cfg (nil for the
// running system). It fails if the sysfs root is not a directory, and
// (ErrConfig) for a SysRoot other than "/sys" without a DevRoot.
func Open(cfg *Config) (*Manager, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.SysRoot != "" && filepath.Clean(c.SysRoot) != sysfs.DefaultRoot && c.DevRoot == "" {
		return nil, fmt.Errorf("%w: SysRoot %s is not /sys but DevRoot is not set: the host's /dev would be read beside another system's sysfs", ErrConfig, c.SysRoot)
	}
	if c.SysRoot == "" {
		c.SysRoot = sysfs.DefaultRoot
	}
	if c.DevRoot == "" {
		c.DevRoot = "/dev"
	}
	fsys, err := sysfs.NewFS(c.SysRoot)
	if err != nil {
		return nil, fmt.Errorf("md: %w", err)
	}
	if c.RunDir == "" {
		c.RunDir = defaultRunDir
	}
	if c.MountInfo == "" {
		c.MountInfo = blockdev.DefaultMountInfo
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MapDir == "" {
		c.MapDir = mapfile.DefaultDir
	}
	if c.UdevDir == "" {
		c.UdevDir = "/run/udev"
	}
	if c.ProcRoot == "" {
		c.ProcRoot = defaultProcRoot
	}
	if c.HomeHost == "" {
		if h, err := os.Hostname(); err == nil {
			c.HomeHost = h
		}
	}
	m := &Manager{fs: fsys, devRoot: c.DevRoot, reads: newReadGate(c.ReadTimeout), now: c.Now,
		mapDir: c.MapDir, homeHost: c.HomeHost, noUdev: c.NoUdev, udevDir: c.UdevDir, procRoot: c.ProcRoot}
	k := sysKernel{fs: fsys, devRoot: c.DevRoot, procRoot: c.ProcRoot}
	m.asm = k
	m.ops = ops{k: k, runDir: c.RunDir, mountInfo: c.MountInfo, diskNumbers: k.diskNumbers}
	// Member superblocks and bitmaps are read with O_DIRECT: see
	// blockdev.OpenDirect.
	m.open = func(name string) (device, error) {
		return blockdev.OpenDirect(filepath.Join(m.devRoot, filepath.FromSlash(name)))
	}
	return m, nil
}

// FS returns the sysfs tree the Manager reads.
func (m *Manager) FS() sysfs.FS { return m.fs }

// ErrNoArray is matched by the error for an array name that does not
// exist.
var ErrNoArray = errors.New("md: no such array")

// Now is the Manager's clock (Config.Now) in UTC, as its reports are
// dated: a watcher dates the events it derives without a report by it.
func (m *Manager) Now() time.Time { return m.now().UTC() }
