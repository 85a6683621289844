package md

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// stopAsm is the assembly door for Stop's tests: it records StopArray
// and RemoveLink (which it carries out as the real door does, on the
// test's directories) and fails on anything else.
type stopAsm struct {
	mu    sync.Mutex
	calls []string
	// busy is how many StopArray calls answer EBUSY before one
	// succeeds; -1 for all of them.
	busy int
	// stopErr, when set, is StopArray's answer (after busy).
	stopErr error
}

func (a *stopAsm) record(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, s)
}

func (a *stopAsm) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *stopAsm) StopArray(array string) error {
	a.record("StopArray(" + array + ")")
	if a.busy != 0 {
		if a.busy > 0 {
			a.busy--
		}
		return &os.PathError{Op: "ioctl STOP_ARRAY", Path: "/dev/" + array, Err: unix.EBUSY}
	}
	return a.stopErr
}

func (a *stopAsm) RemoveLink(link, target string) (bool, error) {
	removed, err := sysKernel{}.RemoveLink(link, target)
	if removed {
		a.record("RemoveLink(" + link + ")")
	}
	return removed, err
}

func (a *stopAsm) unexpected(call string) error {
	a.record(call)
	return fmt.Errorf("stopAsm: unexpected %s", call)
}

func (a *stopAsm) NewArray(string) error               { return a.unexpected("NewArray") }
func (a *stopAsm) SetArrayInfo(string, int, int) error { return a.unexpected("SetArrayInfo") }
func (a *stopAsm) AddDisk(string, sysfs.DevNum) error  { return a.unexpected("AddDisk") }
func (a *stopAsm) Start(string, bool) error            { return a.unexpected("Start") }
func (a *stopAsm) SetSlot(string, string, int) error   { return a.unexpected("SetSlot") }
func (a *stopAsm) Uevent(string) error                 { return a.unexpected("Uevent") }
func (a *stopAsm) DeletePartitions(string) ([]int, error) {
	return nil, a.unexpected("DeletePartitions")
}
func (a *stopAsm) MakeNode(string, sysfs.DevNum) error { return a.unexpected("MakeNode") }
func (a *stopAsm) MakeLink(string, string) error       { return a.unexpected("MakeLink") }
func (a *stopAsm) SetModuleParameter(string, string) error {
	return a.unexpected("SetModuleParameter")
}
func (a *stopAsm) WriteState(string, string, sysfs.MemberCommand) error {
	return a.unexpected("WriteState")
}

// stopRig is a captured system with Stop's surroundings in temporary
// directories: an empty mount table, a process root with no processes
// and no swap, a map file, a run directory, and a sleep that records.
type stopRig struct {
	m      *Manager
	asm    *stopAsm
	name   string // the array's kernel name
	sys    string // sysfs root
	dev    string // dev root
	proc   string // proc root
	mounts string // mountinfo
	sleeps []time.Duration
}

func newStopRig(t *testing.T, fixtureName string) *stopRig {
	t.Helper()
	fc := fixture.Named(t, fixtureName)
	m := fixtureManager(t, fc)
	dir := t.TempDir()
	r := &stopRig{m: m, asm: &stopAsm{}, name: fc.Info.Array, sys: m.fs.Root(), dev: m.devRoot,
		proc: filepath.Join(dir, "proc"), mounts: filepath.Join(dir, "mountinfo")}
	for _, d := range []string{r.proc, filepath.Join(dir, "run"), filepath.Join(dir, "mdadm")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(r.mounts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.proc, "swaps"), []byte("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.asm = r.asm
	m.procRoot = r.proc
	m.mapDir = filepath.Join(dir, "mdadm")
	m.ops.mountInfo = r.mounts
	m.ops.runDir = filepath.Join(dir, "run")
	m.ops.sleep = func(ctx context.Context, d time.Duration) error {
		r.sleeps = append(r.sleeps, d)
		return ctx.Err()
	}
	return r
}

// write creates a file (and its directory) below root.
func write(t testing.TB, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// node makes a block device node for dev, skipping the test where that
// cannot be done (not root).
func node(t testing.TB, path string, dev sysfs.DevNum) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	needMknod(t, mknodBlock(path, dev.Major, dev.Minor))
	return path
}

// arrayDir is the array's sysfs directory (block/NAME, resolved).
func (r *stopRig) arrayDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(filepath.Join(r.sys, "block", r.name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// partition adds partition k of the array, with device number dev.
func (r *stopRig) partition(t testing.TB, k int, dev sysfs.DevNum) string {
	t.Helper()
	p := fmt.Sprintf("%sp%d", r.name, k)
	d := filepath.Join(r.arrayDir(t), p)
	write(t, d, "partition", fmt.Sprintf("%d\n", k))
	write(t, d, "dev", dev.String()+"\n")
	if err := os.Mkdir(filepath.Join(d, "holders"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// process adds process pid with command comm holding path open as
// descriptor 3 (a link, as /proc shows it).
func (r *stopRig) process(t testing.TB, pid int, comm, path string) {
	t.Helper()
	dir := filepath.Join(r.proc, fmt.Sprint(pid))
	write(t, dir, "comm", comm+"\n")
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, filepath.Join(dir, "fd", "3")); err != nil {
		t.Fatal(err)
	}
}

// arrayDev is the array's device number.
func (r *stopRig) arrayDev(t testing.TB) sysfs.DevNum {
	t.Helper()
	a, err := r.m.fs.Array(r.name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Dev()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// images reads every file under the dev root: the member images, the
// nodes and links.
func (r *stopRig) images(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(r.dev, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[p] = "-> " + l
			return err
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *stopRig) readMap(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.m.mapDir, "map"))
	if errors.Is(err, os.ErrNotExist) {
		return "(none)"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStopRefusals: each way an array is in use, or its use unknown, is
// refused naming the user, with no call to the kernel and nothing
// changed under the dev root or in the map file.
func TestStopRefusals(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, r *stopRig)
		want    error
		says    string
	}{{
		name: "mounted",
		prepare: func(t *testing.T, r *stopRig) {
			write(t, filepath.Dir(r.mounts), "mountinfo", fmt.Sprintf("36 25 %s / /srv/my\\040data rw - ext4 /dev/md127 rw\n", r.arrayDev(t)))
		},
		want: errInUse, says: "md127 is mounted on /srv/my data",
	}, {
		name: "partition mounted",
		prepare: func(t *testing.T, r *stopRig) {
			r.partition(t, 1, sysfs.DevNum{Major: 259, Minor: 7})
			write(t, filepath.Dir(r.mounts), "mountinfo", "36 25 259:7 / /boot rw - vfat /dev/md127p1 rw\n")
		},
		want: errInUse, says: "md127p1 mounted on /boot",
	}, {
		name: "held by an array stacked on it",
		prepare: func(t *testing.T, r *stopRig) {
			write(t, r.arrayDir(t), "holders/md126", "")
		},
		want: errInUse, says: "md127 is held by md126",
	}, {
		name: "held by a dm volume",
		prepare: func(t *testing.T, r *stopRig) {
			write(t, r.arrayDir(t), "holders/dm-0", "")
			write(t, r.sys, "block/dm-0/dm/name", "vg-root\n")
		},
		want: errInUse, says: "held by dm-0 (vg-root)",
	}, {
		name: "partition held",
		prepare: func(t *testing.T, r *stopRig) {
			p := r.partition(t, 2, sysfs.DevNum{Major: 259, Minor: 8})
			write(t, r.arrayDir(t), p+"/holders/dm-3", "")
		},
		want: errInUse, says: "md127p2 held by dm-3",
	}, {
		name: "swap",
		prepare: func(t *testing.T, r *stopRig) {
			// The swap table names a path; the device number decides.
			n := node(t, filepath.Join(t.TempDir(), "not-an-md-name"), r.arrayDev(t))
			write(t, r.proc, "swaps", "Filename\tType\tSize\tUsed\tPriority\n"+n+"\tpartition\t1024\t0\t-2\n")
		},
		want: errInUse, says: "used as swap",
	}, {
		name: "open by a process",
		prepare: func(t *testing.T, r *stopRig) {
			n := node(t, filepath.Join(t.TempDir(), "sda"), r.arrayDev(t))
			r.process(t, 4242, "sleep", n)
		},
		want: errInUse, says: "md127 is open by process 4242 (sleep)",
	}, {
		name: "process with a hostile command name",
		prepare: func(t *testing.T, r *stopRig) {
			n := node(t, filepath.Join(t.TempDir(), "x"), r.arrayDev(t))
			r.process(t, 7, "evil\x1b[2J", n)
		},
		want: errInUse, says: `open by process 7 (evil\x1b[2J)`,
	}, {
		name: "processes cannot be listed",
		prepare: func(t *testing.T, r *stopRig) {
			r.m.procRoot = filepath.Join(r.proc, "missing")
		},
		want: errStopUnknown, says: "processes:",
	}, {
		name: "holders cannot be read",
		prepare: func(t *testing.T, r *stopRig) {
			if err := os.Remove(filepath.Join(r.arrayDir(t), "holders")); err != nil {
				t.Fatal(err)
			}
		},
		want: errStopUnknown, says: "holders of md127",
	}, {
		name: "mount table unreadable",
		prepare: func(t *testing.T, r *stopRig) {
			r.m.ops.mountInfo = t.TempDir() // a directory
		},
		want: errStopUnknown, says: "mounts:",
	}, {
		name: "swap device that cannot be stat'ed",
		prepare: func(t *testing.T, r *stopRig) {
			write(t, r.proc, "swaps", "Filename\tType\tSize\tUsed\tPriority\n/gone/dev\tpartition\t1024\t0\t-2\n")
		},
		want: errStopUnknown, says: "swap /gone/dev",
	}, {
		name: "external metadata",
		prepare: func(t *testing.T, r *stopRig) {
			write(t, r.arrayDir(t), "md/metadata_version", "external:imsm\n")
		},
		want: errStopExternal, says: "external:imsm",
	}, {
		name: "a replace holds the lock",
		prepare: func(t *testing.T, r *stopRig) {
			st, err := r.m.Status(context.Background(), r.name)
			if err != nil {
				t.Fatal(err)
			}
			unlock, err := lockArray(r.m.ops.runDir, st.UUID)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(unlock)
		},
		want: errStopLocked, says: "a replace or heal is running",
	}, {
		name: "whether a replace runs cannot be told",
		prepare: func(t *testing.T, r *stopRig) {
			st, err := r.m.Status(context.Background(), r.name)
			if err != nil {
				t.Fatal(err)
			}
			// A symbolic link where the lock file is: the open
			// refuses to follow it (ELOOP).
			p := filepath.Join(r.m.ops.runDir, "replace-"+runKey(st.UUID)+".lock")
			if err := os.Symlink("/dev/null", p); err != nil {
				t.Fatal(err)
			}
		},
		want: errStopUnknown, says: "whether a replace runs",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			r := newStopRig(t, "boot-mirror")
			r.linksAndMap(t)
			tt.prepare(t, r)
			before, mapBefore := r.images(t), r.readMap(t)
			for _, dry := range []bool{true, false} {
				ch := Change{DryRun: dry}
				err := r.m.Stop(context.Background(), r.name, &ch)
				c.Assert(err, qt.ErrorIs, ErrRefused)
				c.Assert(err, qt.ErrorIs, tt.want)
				var re *RefusedError
				c.Assert(errors.As(err, &re), qt.IsTrue)
				c.Check(re.Op, qt.Equals, "stop")
				c.Check(err.Error(), qt.Contains, tt.says)
				c.Check(ch.Write, qt.Equals, "")
				c.Check(ch.Removed, qt.IsNil)
			}
			c.Check(r.asm.Calls(), qt.HasLen, 0)
			c.Check(r.sleeps, qt.HasLen, 0)
			c.Check(r.images(t), qt.DeepEquals, before)
			c.Check(r.readMap(t), qt.Equals, mapBefore)
		})
	}
}

// TestStopNotInUse: what does not use the array does not refuse it: a
// node named like the array with another device number, another
// device's mount and swap, a process holding another device.
func TestStopNotInUse(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	other := sysfs.DevNum{Major: 9, Minor: 1}
	n := node(t, filepath.Join(t.TempDir(), "md127"), other)
	r.process(t, 10, "cat", n)
	r.process(t, 11, "sh", "/dev/null") // not a block device
	write(t, r.proc, "12/comm", "kworker\n")
	if err := os.Mkdir(filepath.Join(r.proc, "12", "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "closed"), filepath.Join(r.proc, "12", "fd", "4")); err != nil {
		t.Fatal(err) // a descriptor closed while looked at
	}
	write(t, r.proc, "self", "")
	write(t, r.proc, "swaps", "Filename\tType\tSize\tUsed\tPriority\n"+n+"\tpartition\t1024\t0\t-2\n/gone/file\tfile\t1024\t0\t-3\n")
	write(t, filepath.Dir(r.mounts), "mountinfo", "36 25 9:1 / /srv rw - ext4 /dev/md1 rw\n")
	c.Assert(r.m.Stop(context.Background(), r.name), qt.IsNil)
	c.Check(r.asm.Calls(), qt.DeepEquals, []string{"StopArray(md127)"})
}

// linksAndMap lays out what mdadm (or mdctl) without udev and udev leave
// for the boot mirror md127, and a map file with it and another array.
func (r *stopRig) linksAndMap(t testing.TB) {
	t.Helper()
	md := filepath.Join(r.dev, "md")
	if err := os.MkdirAll(md, 0o700); err != nil {
		t.Fatal(err)
	}
	node := "/dev/" + r.name
	for _, l := range []struct{ link, target string }{
		{"boot", node},                          // made by mdadm -A without udev: removed
		{"boot1", node + "p1"},                  // its partition link: removed
		{"boot15", node + "p15"},                // the last partition mdadm looks at
		{"boot16", node + "p16"},                // beyond: left
		{"boot2", "/dev/md126p2"},               // another array's: left
		{"talos:boot", "../" + r.name},          // relative, as udev makes them: left
		{"md-127", node},                        // not a name of this array: left
		{"boot5", filepath.Join(r.dev, r.name)}, // not the text mdadm writes: left
		{"boot3", "/dev/md/../md127"},           // not exactly the node: left
	} {
		if err := os.Symlink(l.target, filepath.Join(md, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, md, "boot4", "a regular file\n")
	e := []mapfile.Entry{
		{Dev: r.name, Metadata: "1.0", UUID: "01234567:89abcdef:01234567:89abcdef", Path: "/dev/md/boot"},
		{Dev: "md126", Metadata: "1.2", UUID: "11111111:22222222:33333333:44444444", Path: "/dev/md/data"},
	}
	if err := (mapfile.Map{Dir: r.m.mapDir}).Write(e); err != nil {
		t.Fatal(err)
	}
}

// TestStopRemovesItsOwn: after STOP_ARRAY, the links whose text is
// exactly the array's node (or a partition's) are removed, and the map
// entry; udev's relative links, other arrays' links, regular files and
// other entries stay. A dry run says the same and changes nothing.
func TestStopRemovesItsOwn(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	md := filepath.Join(r.dev, "md")
	wantRemoved := []string{filepath.Join(md, "boot"), filepath.Join(md, "boot1"), filepath.Join(md, "boot15"),
		"map entry md127 (" + filepath.Join(r.m.mapDir, "map") + ")"}

	before, mapBefore := r.images(t), r.readMap(t)
	dry := Change{DryRun: true}
	c.Assert(r.m.Stop(context.Background(), "/dev/md/boot", &dry), qt.IsNil)
	c.Check(dry.Array, qt.Equals, "md127")
	c.Check(dry.Write, qt.Equals, "STOP_ARRAY")
	c.Check(dry.Removed, qt.DeepEquals, wantRemoved)
	c.Check(r.asm.Calls(), qt.HasLen, 0)
	c.Check(r.images(t), qt.DeepEquals, before)
	c.Check(r.readMap(t), qt.Equals, mapBefore)

	var ch Change
	c.Assert(r.m.Stop(context.Background(), "boot", &ch), qt.IsNil)
	c.Check(ch.Write, qt.Equals, "STOP_ARRAY")
	c.Check(ch.Removed, qt.DeepEquals, wantRemoved)
	c.Check(r.asm.Calls()[0], qt.Equals, "StopArray(md127)")
	for _, l := range []string{"boot", "boot1", "boot15"} {
		_, err := os.Lstat(filepath.Join(md, l))
		c.Check(err, qt.ErrorIs, os.ErrNotExist, qt.Commentf("%s", l))
	}
	after := r.images(t)
	for _, l := range []string{"boot16", "boot2", "talos:boot", "md-127", "boot5", "boot3", "boot4"} {
		p := filepath.Join(md, l)
		c.Check(after[p], qt.Equals, before[p], qt.Commentf("%s", l))
	}
	c.Check(r.readMap(t), qt.Equals, "md126 1.2 11111111:22222222:33333333:44444444 /dev/md/data\n")
}

// TestStopMapPath: the link named in the map entry is the one removed,
// whatever the superblock name; a path outside DEVROOT/md is not
// followed.
func TestStopMapPath(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	md := filepath.Join(r.dev, "md")
	c.Assert(os.MkdirAll(md, 0o700), qt.IsNil)
	node := "/dev/" + r.name
	c.Assert(os.Symlink(node, filepath.Join(md, "custom7")), qt.IsNil)
	c.Assert(os.Symlink(node+"p1", filepath.Join(md, "custom7p1")), qt.IsNil)
	c.Assert(os.Symlink(node, filepath.Join(r.dev, "elsewhere")), qt.IsNil)
	c.Assert(mapfile.Map{Dir: r.m.mapDir}.Write([]mapfile.Entry{{Dev: r.name, Metadata: "1.0", UUID: "01234567:89abcdef:01234567:89abcdef", Path: "/dev/md/custom7"}}), qt.IsNil)
	var ch Change
	c.Assert(r.m.Stop(context.Background(), r.name, &ch), qt.IsNil)
	c.Check(ch.Removed[:2], qt.DeepEquals, []string{filepath.Join(md, "custom7"), filepath.Join(md, "custom7p1")})
	c.Check(r.readMap(t), qt.Equals, "")
	c.Assert(mapfile.Map{Dir: r.m.mapDir}.Write([]mapfile.Entry{{Dev: r.name, Metadata: "1.0", UUID: "01234567:89abcdef:01234567:89abcdef", Path: "/dev/elsewhere"}}), qt.IsNil)
	c.Check(r.m.stopLinks(r.name, Array{}, mapfile.Entry{Path: "/dev/elsewhere"}), qt.Not(qt.Any(qt.Equals)), stopLink{filepath.Join(r.dev, "elsewhere"), node})
}

// TestStopNoMapFile: without a map file nothing is written there (mdadm
// rebuilds a missing map from the running arrays).
func TestStopNoMapFile(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	var ch Change
	c.Assert(r.m.Stop(context.Background(), r.name, &ch), qt.IsNil)
	c.Check(ch.Removed, qt.IsNil)
	c.Check(r.readMap(t), qt.Equals, "(none)")
	_, err := os.Stat(filepath.Join(r.m.mapDir, "map.lock"))
	c.Check(err, qt.ErrorIs, os.ErrNotExist)
}

// TestStopBusy: STOP_ARRAY answering EBUSY is retried 200 ms apart; 25
// answers in a row are a refusal matching ErrRefused and unix.EBUSY,
// and nothing is removed.
func TestStopBusy(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	r.asm.busy = 3
	c.Assert(r.m.Stop(context.Background(), r.name), qt.IsNil)
	c.Check(r.asm.Calls()[:4], qt.DeepEquals, []string{"StopArray(md127)", "StopArray(md127)", "StopArray(md127)", "StopArray(md127)"})
	c.Check(r.asm.Calls()[4], qt.Matches, `RemoveLink\(.*/md/boot\)`)
	c.Check(r.sleeps, qt.DeepEquals, []time.Duration{stopInterval, stopInterval, stopInterval})

	r = newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	before, mapBefore := r.images(t), r.readMap(t)
	r.asm.busy = -1
	var ch Change
	err := r.m.Stop(context.Background(), r.name, &ch)
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Assert(err, qt.ErrorIs, unix.EBUSY)
	c.Check(err, qt.ErrorMatches, `md: refusing to stop an array in use: the kernel still reports md127 busy after 25 tries 200ms apart \(open by another process\); nothing changed: .*device or resource busy`)
	c.Check(r.asm.Calls(), qt.HasLen, stopTries)
	c.Check(r.sleeps, qt.HasLen, stopTries-1)
	c.Check(ch.Removed, qt.IsNil)
	c.Check(r.images(t), qt.DeepEquals, before)
	c.Check(r.readMap(t), qt.Equals, mapBefore)
}

// TestStopBusyCancelled: ctx ends the wait; that is not a refusal, and
// nothing is removed.
func TestStopBusyCancelled(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	r.asm.busy = -1
	ctx, cancel := context.WithCancel(context.Background())
	r.m.ops.sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	err := r.m.Stop(ctx, r.name)
	c.Assert(err, qt.ErrorIs, context.Canceled)
	c.Check(errors.Is(err, ErrRefused), qt.IsFalse)
	c.Check(err, qt.ErrorMatches, `md: stopping md127: interrupted .* nothing changed: .*`)
	c.Check(r.asm.Calls(), qt.HasLen, 1)
	_, err = os.Lstat(filepath.Join(r.dev, "md", "boot"))
	c.Check(err, qt.IsNil)
}

// TestStopFails: another error of STOP_ARRAY is a failure that changed
// nothing, not a refusal, and nothing is removed.
func TestStopFails(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	mapBefore := r.readMap(t)
	r.asm.stopErr = &os.PathError{Op: "open", Path: "/dev/md127", Err: unix.ENOENT}
	err := r.m.Stop(context.Background(), r.name)
	c.Assert(err, qt.ErrorIs, os.ErrNotExist)
	c.Check(errors.Is(err, ErrRefused), qt.IsFalse)
	c.Check(err, qt.ErrorMatches, `md: stopping md127 failed, nothing changed: .*`)
	c.Check(r.asm.Calls(), qt.HasLen, 1)
	c.Check(r.readMap(t), qt.Equals, mapBefore)
}

// TestStopIncomplete: a map file that cannot be rewritten after the stop
// is reported as such, saying the array was stopped.
func TestStopIncomplete(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "boot-mirror")
	r.linksAndMap(t)
	// map.new is where the rewrite goes: a directory there fails it.
	c.Assert(os.Mkdir(filepath.Join(r.m.mapDir, "map.new"), 0o700), qt.IsNil)
	var ch Change
	err := r.m.Stop(context.Background(), r.name, &ch)
	c.Assert(err, qt.ErrorIs, ErrStopIncomplete)
	c.Check(errors.Is(err, ErrRefused), qt.IsFalse)
	c.Check(err.Error(), qt.Contains, "stopped md127 and removed "+filepath.Join(r.dev, "md", "boot"))
	c.Check(err.Error(), qt.Contains, "could not remove: map entry md127")
}

// TestStopStates: an inactive array (assembled, not started) is stopped
// (the kernel skips the open count for it); a name that matches nothing
// is refused as no such array.
func TestStopStates(t *testing.T) {
	c := qt.New(t)
	r := newStopRig(t, "raid5-inactive")
	c.Assert(r.m.Stop(context.Background(), r.name), qt.IsNil)
	c.Check(r.asm.Calls(), qt.DeepEquals, []string{"StopArray(" + r.name + ")"})

	err := r.m.Stop(context.Background(), "nope")
	c.Assert(err, qt.ErrorIs, ErrRefused)
	c.Assert(err, qt.ErrorIs, ErrNoArray)
	c.Check(r.asm.Calls(), qt.HasLen, 1)

	// A clear md device (no array in it) is stopped as mdadm does: the
	// kernel then removes it.
	r = newStopRig(t, "boot-mirror")
	write(t, r.arrayDir(t), "md/array_state", "clear\n")
	c.Assert(r.m.Stop(context.Background(), r.name), qt.IsNil)
	c.Check(r.asm.Calls(), qt.DeepEquals, []string{"StopArray(md127)"})
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/dev/md127`:         "/dev/md127",
		`/swap\040file`:      "/swap file",
		`/a\134b`:            `/a\b`,
		`/short\04`:          `/short\04`,
		`/not\999octal\011x`: "/not\\999octal\tx",
	} {
		qt.Check(t, unescapeOctal(in), qt.Equals, want, qt.Commentf("%q", in))
	}
}

// The decision alone: every refusal names the array.
func TestDecideStop(t *testing.T) {
	for _, tt := range []struct {
		f    stopFacts
		want error
	}{
		{stopFacts{name: "md0"}, nil},
		{stopFacts{name: "md0", state: sysfs.StateInactive}, nil},
		{stopFacts{name: "md0", users: []string{"held by md1"}, unknown: []string{"x"}}, errInUse},
		{stopFacts{name: "md0", unknown: []string{"processes: no"}}, errStopUnknown},
		{stopFacts{name: "md0", metadata: sysfs.MetadataVersion{Raw: "external:ddf", Kind: sysfs.MetadataExternal}}, errStopExternal},
		{stopFacts{name: "md0", lockDir: "/run/mdraid"}, errStopLocked},
	} {
		err := decideStop(&tt.f)
		if tt.want == nil {
			qt.Check(t, err, qt.IsNil)
			continue
		}
		qt.Check(t, err, qt.ErrorIs, tt.want)
		qt.Check(t, strings.Contains(err.Error(), "md0"), qt.IsTrue)
	}
}
