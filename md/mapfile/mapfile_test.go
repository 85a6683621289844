package mapfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
)

func TestParseSkipsWhatMdadmSkips(t *testing.T) {
	c := qt.New(t)
	in := "md127 1.2 a1b2c3d4:00000000:11111111:22222222 /dev/md/boot\n" +
		"garbage\n" +
		"md1 0.90 zzzz:0:0:0 /dev/md1\n" + // bad uuid
		"md2 1.2 a1b2c3d4:00000000:11111111:22222222 relative\n" +
		"sda 1.2 a1b2c3d4:00000000:11111111:22222222 /dev/md/x\n" +
		"  md3   0.90   01234567:89abcdef:01234567:89abcdef   /dev/md3  \n"
	got := mapfile.Parse([]byte(in))
	c.Assert(got, qt.DeepEquals, []mapfile.Entry{
		{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:22222222", Path: "/dev/md/boot"},
		{Dev: "md3", Metadata: "0.90", UUID: "01234567:89abcdef:01234567:89abcdef", Path: "/dev/md3"},
	})
	b, err := mapfile.Format(got)
	c.Assert(err, qt.IsNil)
	c.Assert(mapfile.Parse(b), qt.DeepEquals, got)
}

func TestFormatRefusesWhatCannotBeReadBack(t *testing.T) {
	c := qt.New(t)
	good := mapfile.Entry{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:22222222", Path: "/dev/md/boot"}
	for _, e := range []mapfile.Entry{
		{Dev: "md127", Metadata: "1.2", UUID: good.UUID, Path: "/dev/md/two words"},
		{Dev: "md127", Metadata: "1.2", UUID: good.UUID, Path: "/dev/md/new\nline"},
		{Dev: "md127", Metadata: "", UUID: good.UUID, Path: good.Path},
		{Dev: "sda", Metadata: "1.2", UUID: good.UUID, Path: good.Path},
		{Dev: "md", Metadata: "1.2", UUID: good.UUID, Path: good.Path},
		{Dev: "md_", Metadata: "1.2", UUID: good.UUID, Path: good.Path},
		{Dev: "md12a", Metadata: "1.2", UUID: good.UUID, Path: good.Path},
		{Dev: "md_a/b", Metadata: "1.2", UUID: good.UUID, Path: good.Path},
		{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:2222222", Path: good.Path},
		{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4-00000000:11111111:22222222", Path: good.Path},
		{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:2222222g", Path: good.Path},
		{Dev: "md127", Metadata: "1.2", UUID: "A1B2C3D4:00000000:11111111:22222222", Path: good.Path},
		{Dev: "md127", Metadata: "1.2", UUID: good.UUID, Path: "/dev/md/" + string(make([]byte, 300))},
	} {
		_, err := mapfile.Format([]mapfile.Entry{good, e})
		c.Check(errors.Is(err, mapfile.ErrInvalid), qt.IsTrue, qt.Commentf("%q", e))
	}
	for _, dev := range []string{"md0", "md127", "md_boot", "md_d0"} {
		e := good
		e.Dev = dev
		_, err := mapfile.Format([]mapfile.Entry{e})
		c.Check(err, qt.IsNil, qt.Commentf("%s", dev))
	}
}

func TestUUIDText(t *testing.T) {
	c := qt.New(t)
	u := uuid.MustParse("00112233-4455-6677-8899-aabbccddeeff")
	c.Assert(mapfile.Groups(u), qt.Equals, "00112233:44556677:8899aabb:ccddeeff")
	c.Assert(mapfile.UUIDText(&superblock.Superblock{Version: superblock.Version12, SetUUID: u}),
		qt.Equals, "33221100:77665544:bbaa9988:ffeeddcc")
	c.Assert(mapfile.UUIDText(&superblock.Superblock{Version: superblock.Version090, SetUUID: u}),
		qt.Equals, "00112233:44556677:8899aabb:ccddeeff")
}

func TestUpdateAndRemove(t *testing.T) {
	c := qt.New(t)
	m := mapfile.Map{Dir: filepath.Join(t.TempDir(), "mdadm")}
	_, err := m.Read()
	c.Assert(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
	a := mapfile.Entry{Dev: "md127", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:22222222", Path: "/dev/md/boot"}
	b := mapfile.Entry{Dev: "md126", Metadata: "0.90", UUID: "01234567:89abcdef:01234567:89abcdef", Path: "/dev/md126"}
	c.Assert(m.Update(a), qt.IsNil)
	c.Assert(m.Update(b), qt.IsNil)
	// The same UUID under another device replaces the old line.
	a2 := a
	a2.Dev = "md125"
	c.Assert(m.Update(a2), qt.IsNil)
	got, err := m.Read()
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, []mapfile.Entry{a2, b})
	c.Assert(m.Remove("md126"), qt.IsNil)
	c.Assert(m.Remove("md9"), qt.IsNil)
	got, err = m.Read()
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.DeepEquals, []mapfile.Entry{a2})
	st, err := os.Stat(filepath.Join(m.Dir, "map"))
	c.Assert(err, qt.IsNil)
	c.Assert(st.Mode().Perm(), qt.Equals, fs.FileMode(0o600))
	// The lock is released by unlinking it, as mdadm does.
	_, err = os.Stat(filepath.Join(m.Dir, "map.lock"))
	c.Assert(errors.Is(err, fs.ErrNotExist), qt.IsTrue)
	// An invalid entry changes nothing.
	c.Assert(errors.Is(m.Update(mapfile.Entry{Dev: "md1"}), mapfile.ErrInvalid), qt.IsTrue)
	got2, _ := m.Read()
	c.Assert(got2, qt.DeepEquals, got)
}

func TestLockExcludes(t *testing.T) {
	c := qt.New(t)
	m := mapfile.Map{Dir: t.TempDir()}
	l, err := m.Lock()
	c.Assert(err, qt.IsNil)
	done := make(chan error)
	go func() {
		done <- m.Update(mapfile.Entry{Dev: "md1", Metadata: "1.2", UUID: "a1b2c3d4:00000000:11111111:22222222", Path: "/dev/md1"})
	}()
	c.Assert(l.Update(mapfile.Entry{Dev: "md2", Metadata: "1.2", UUID: "b1b2c3d4:00000000:11111111:22222222", Path: "/dev/md2"}), qt.IsNil)
	got, err := l.Read()
	c.Assert(err, qt.IsNil)
	c.Assert(len(got), qt.Equals, 1) // the other writer waits for the lock
	c.Assert(l.Unlock(), qt.IsNil)
	c.Assert(<-done, qt.IsNil)
	got, _ = m.Read()
	c.Assert(len(got), qt.Equals, 2)
}

func TestLockWithinGivesUp(t *testing.T) {
	c := qt.New(t)
	m := mapfile.Map{Dir: t.TempDir()}
	l, err := m.Lock()
	c.Assert(err, qt.IsNil)
	start := time.Now()
	_, err = m.LockWithin(30 * time.Millisecond)
	c.Assert(err, qt.ErrorIs, mapfile.ErrLockTimeout)
	c.Assert(time.Since(start) >= 30*time.Millisecond, qt.IsTrue)
	// Giving up took nothing: the holder still holds it and can write.
	c.Assert(l.Update(mapfile.Entry{Dev: "md2", Metadata: "1.2", UUID: "b1b2c3d4:00000000:11111111:22222222", Path: "/dev/md2"}), qt.IsNil)

	// Released while another waits: the waiter gets it.
	got := make(chan error)
	go func() {
		l2, err := m.LockWithin(time.Minute)
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	c.Assert(l.Unlock(), qt.IsNil)
	c.Assert(<-got, qt.IsNil)
	l3, err := m.LockWithin(0)
	c.Assert(err, qt.IsNil)
	c.Assert(l3.Unlock(), qt.IsNil)
}
