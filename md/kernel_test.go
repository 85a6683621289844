package md

import (
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/sysfs"
)

// TestWriteDeviceChecksTheDevice: the superblock write opens the path and
// checks that it is still the planned device before writing anything.
func TestWriteDeviceChecksTheDevice(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "disk")
	c.Assert(os.WriteFile(path, make([]byte, 8192), 0o644), qt.IsNil)
	err := sysKernel{}.WriteDevice(deviceWrite{Path: path, Dev: sysfs.DevNum{Major: 254, Minor: 32}, Size: 8192, LBS: 512, MaxLBS: 512, Regions: []region{{What: "sb", Off: 4096, Data: []byte{1, 2, 3}}}})
	c.Check(err, qt.ErrorIs, ErrPlanChanged)
	b, err := os.ReadFile(path)
	c.Assert(err, qt.IsNil)
	c.Check(b, qt.DeepEquals, make([]byte, 8192))
}
