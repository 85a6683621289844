//go:build linux

package ioctl

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	qt "github.com/frankban/quicktest"
	"golang.org/x/sys/unix"
)

// calls runs every request on d; names are the Op each error must carry.
func calls(d *Device) []struct {
	op  string
	err error
} {
	_, errVersion := d.Version()
	_, errArray := d.ArrayInfo()
	_, errDisk := d.DiskInfo(0)
	return []struct {
		op  string
		err error
	}{
		{"ioctl RAID_VERSION", errVersion},
		{"ioctl GET_ARRAY_INFO", errArray},
		{"ioctl GET_DISK_INFO", errDisk},
		{"ioctl ADD_NEW_DISK", d.AddNewDisk(DiskInfo{Major: 7, Minor: 0})},
		{"ioctl SET_ARRAY_INFO", d.SetArrayInfo(ArrayInfo{MajorVersion: 1, MinorVersion: 2})},
		{"ioctl HOT_REMOVE_DISK", d.HotRemoveDisk(unix.Mkdev(7, 0))},
		{"ioctl SET_DISK_FAULTY", d.SetDiskFaulty(unix.Mkdev(7, 0))},
		{"ioctl RUN_ARRAY", d.RunArray()},
		{"ioctl STOP_ARRAY", d.StopArray()},
		{"ioctl STOP_ARRAY_RO", d.StopArrayRO()},
		{"ioctl RESTART_ARRAY_RW", d.RestartArrayRW()},
	}
}

// Neither /dev/null nor a regular file implements md ioctls, so the kernel
// answers ENOTTY, which must reach the caller inside an *os.PathError.
func TestNotMDDevice(t *testing.T) {
	regular := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(regular, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/null", regular} {
		t.Run(path, func(t *testing.T) {
			c := qt.New(t)
			d, err := Open(path)
			if errors.Is(err, fs.ErrNotExist) {
				c.Skip(err)
			}
			c.Assert(err, qt.IsNil)
			defer d.Close()
			for _, call := range calls(d) {
				c.Check(call.err, qt.ErrorIs, unix.ENOTTY, qt.Commentf("%s", call.op))
				c.Check(call.err, qt.ErrorIs, syscall.ENOTTY)
				var pe *os.PathError
				if c.Check(call.err, qt.ErrorAs, &pe) {
					c.Check(pe.Op, qt.Equals, call.op)
					c.Check(pe.Path, qt.Equals, path)
					c.Check(pe.Err, qt.Equals, error(unix.ENOTTY))
				}
				c.Check(call.err, qt.ErrorMatches, call.op+" "+path+": inappropriate ioctl for device")
			}
		})
	}
}

func TestNewDevice(t *testing.T) {
	c := qt.New(t)
	f, err := os.Open("/dev/null")
	c.Assert(err, qt.IsNil)
	d := NewDevice(f)
	_, err = d.ArrayInfo()
	c.Check(err, qt.ErrorMatches, `ioctl GET_ARRAY_INFO /dev/null: .*`)
	c.Check(err, qt.ErrorIs, unix.ENOTTY)
	c.Assert(d.Close(), qt.IsNil)
	// Close closed f.
	_, err = f.Stat()
	c.Check(err, qt.ErrorIs, os.ErrClosed)
}

func TestClosed(t *testing.T) {
	c := qt.New(t)
	d, err := Open("/dev/null")
	c.Assert(err, qt.IsNil)
	c.Assert(d.Close(), qt.IsNil)
	for _, call := range calls(d) {
		c.Check(call.err, qt.ErrorIs, os.ErrClosed, qt.Commentf("%s", call.op))
		var pe *os.PathError
		if c.Check(call.err, qt.ErrorAs, &pe) {
			c.Check(pe.Op, qt.Equals, call.op)
		}
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "md0"))
	qt.Assert(t, err, qt.ErrorIs, fs.ErrNotExist)
}

// Arguments the kernel would misread are refused before the call.
func TestArgumentRange(t *testing.T) {
	c := qt.New(t)
	d, err := Open("/dev/null")
	c.Assert(err, qt.IsNil)
	defer d.Close()

	numbers := []int{-1}
	if strconv.IntSize == 64 {
		tooBig := int64(math.MaxInt32) + 1
		numbers = append(numbers, int(tooBig))
	}
	for _, n := range numbers {
		_, err := d.DiskInfo(n)
		c.Check(err, qt.ErrorIs, unix.EINVAL, qt.Commentf("number %d", n))
		c.Check(err, qt.ErrorMatches, `ioctl GET_DISK_INFO /dev/null: invalid argument`)
	}
	// The largest number passes the check and reaches /dev/null.
	_, err = d.DiskInfo(math.MaxInt32)
	c.Check(err, qt.ErrorIs, unix.ENOTTY)

	tooBig := unix.Mkdev(4096, 0)
	c.Check(d.HotRemoveDisk(tooBig), qt.ErrorIs, unix.EINVAL)
	c.Check(d.SetDiskFaulty(tooBig), qt.ErrorIs, unix.EINVAL)
	c.Check(d.SetDiskFaulty(math.MaxUint32), qt.ErrorIs, unix.ENOTTY)
}

// unix.Errno maps EPERM and EACCES to fs.ErrPermission; the wrapping must
// keep that working for callers that do not know errno values.
func TestPermissionErrors(t *testing.T) {
	c := qt.New(t)
	d := &Device{path: "/dev/md0"}
	for _, errno := range []unix.Errno{unix.EACCES, unix.EPERM} {
		err := d.pathError(opStopArray, errno)
		c.Check(err, qt.ErrorIs, fs.ErrPermission)
		c.Check(err, qt.ErrorIs, errno)
		c.Check(err, qt.ErrorMatches, `ioctl STOP_ARRAY /dev/md0: .*`)
	}
	c.Check(d.pathError(opStopArray, unix.EBUSY), qt.ErrorIs, unix.EBUSY)
	c.Check(d.pathError(opStopArray, nil), qt.IsNil)
}

func TestStatBlockDeviceErrors(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		path string
		want error
	}{
		{"regular file", regular, ErrNotBlockDevice},
		{"directory", dir, ErrNotBlockDevice},
		{"fifo", fifo, ErrNotBlockDevice}, // must not block in open
		{"character device", "/dev/null", ErrNotBlockDevice},
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			_, err := StatBlockDevice(tt.path)
			c.Assert(err, qt.ErrorIs, tt.want)
			var pe *os.PathError
			c.Assert(err, qt.ErrorAs, &pe)
			c.Check(pe.Path, qt.Equals, tt.path)
		})
	}
}

// TestStatBlockDevice compares the result with sysfs for the first block
// device node in /dev, if the test can open one.
func TestStatBlockDevice(t *testing.T) {
	c := qt.New(t)
	entries, err := os.ReadDir("/dev")
	c.Assert(err, qt.IsNil)
	for _, e := range entries {
		path := filepath.Join("/dev", e.Name())
		if e.Type()&fs.ModeDevice == 0 || e.Type()&fs.ModeCharDevice != 0 {
			continue
		}
		b, err := StatBlockDevice(path)
		if errors.Is(err, fs.ErrPermission) {
			continue
		}
		c.Assert(err, qt.IsNil)
		var st unix.Stat_t
		c.Assert(unix.Stat(path, &st), qt.IsNil)
		c.Check(b.Dev(), qt.Equals, uint64(st.Rdev))
		c.Check(b.Major, qt.Equals, unix.Major(uint64(st.Rdev)))
		c.Check(b.Minor, qt.Equals, unix.Minor(uint64(st.Rdev)))
		sectors, err := os.ReadFile("/sys/dev/block/" + strconv.Itoa(int(b.Major)) + ":" + strconv.Itoa(int(b.Minor)) + "/size")
		if err == nil {
			n, err := strconv.ParseUint(strings.TrimSpace(string(sectors)), 10, 64)
			c.Assert(err, qt.IsNil)
			c.Check(b.Size, qt.Equals, n*512)
		}
		c.Logf("%s: %d:%d, %d bytes", path, b.Major, b.Minor, b.Size)
		return
	}
	c.Skip("no block device node in /dev that can be opened")
}
