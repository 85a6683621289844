package sysfstree

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// sample is shaped like a real capture: a RAID1 md device whose member
// links point into a PCI virtio device.
const sample = `# sysfstree v1
l "block/md127" "../devices/virtual/block/md127"
l "block/vdb" "../devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
l "class/block/vdb" "../../devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
l "dev/block/254:16" "../../devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
d "devices"
f "devices/pci0000:00/0000:00:10.0/device" "0x1001\n"
l "devices/pci0000:00/0000:00:10.0/subsystem" "../../../bus/pci"
f "devices/pci0000:00/0000:00:10.0/vendor" "0x1af4\n"
l "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/device" "../../../virtio2"
f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/dev" "254:16\n"
d "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/holders"
l "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/holders/md127" "../../../../../../virtual/block/md127"
f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/queue/logical_block_size" "512\n"
f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/serial" "mdtest-0\n"
f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/size" "131072\n"
l "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/subsystem" "../../../../../../class/block"
l "devices/pci0000:00/0000:00:10.0/virtio2/subsystem" "../../../../bus/virtio"
f "devices/virtual/block/md127/dev" "9:127\n"
f "devices/virtual/block/md127/md/array_state" "clean\n"
f "devices/virtual/block/md127/md/bad weird name" "a \"quoted\"\n\tvalue\n"
l "devices/virtual/block/md127/md/dev-vdb/block" "../../../../../pci0000:00/0000:00:10.0/virtio2/block/vdb"
f "devices/virtual/block/md127/md/dev-vdb/state" "in_sync\n"
w "devices/virtual/block/md127/md/new_dev" "permission denied"
l "devices/virtual/block/md127/md/rd0" "dev-vdb"
d "devices/virtual/block/md127/slaves"
l "devices/virtual/block/md127/slaves/vdb" "../../../../pci0000:00/0000:00:10.0/virtio2/block/vdb"
`

func TestRoundTripThroughATree(t *testing.T) {
	c := qt.New(t)
	want, err := Parse(strings.NewReader(sample))
	c.Assert(err, qt.IsNil)
	dir := c.TempDir()
	c.Assert(Materialize(dir, want), qt.IsNil)

	got, err := CaptureArray(dir, "md127")
	c.Assert(err, qt.IsNil)

	// The capture must find every node of the sample again (the sample
	// lists no node that capture would not visit), with the same data,
	// except that a materialized unreadable attribute is an empty file
	// when read as root.
	byPath := map[string]Entry{}
	for _, e := range got {
		byPath[e.Path] = e
	}
	for _, w := range want {
		g, ok := byPath[w.Path]
		c.Assert(ok, qt.IsTrue, qt.Commentf("capture lost %q", w.Path))
		if w.Kind == Unreadable {
			continue
		}
		c.Assert(g, qt.DeepEquals, w)
	}

	var buf bytes.Buffer
	c.Assert(Write(&buf, got), qt.IsNil)
	again, err := Parse(&buf)
	c.Assert(err, qt.IsNil)
	c.Assert(again, qt.DeepEquals, got)
}

func TestMaterializeKeepsLinksRelative(t *testing.T) {
	c := qt.New(t)
	entries, err := Parse(strings.NewReader(sample))
	c.Assert(err, qt.IsNil)
	dir := c.TempDir()
	c.Assert(Materialize(dir, entries), qt.IsNil)
	state, err := os.ReadFile(filepath.Join(dir, "block/md127/md/dev-vdb/block/serial"))
	c.Assert(err, qt.IsNil)
	c.Assert(string(state), qt.Equals, "mdtest-0\n")
	_, err = os.OpenFile(filepath.Join(dir, "block/md127/md/no_such_attr"), os.O_WRONLY, 0)
	c.Assert(err, qt.ErrorIs, os.ErrNotExist)
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"no header", "d \"x\"\n"},
		{"unknown kind", Header + "\nx \"a\"\n"},
		{"unquoted path", Header + "\nd a\n"},
		{"absolute path", Header + "\nd \"/a\"\n"},
		{"dotdot path", Header + "\nd \"../a\"\n"},
		{"unclean path", Header + "\nd \"a//b\"\n"},
		{"file without data", Header + "\nf \"a\"\n"},
		{"link without target", Header + "\nl \"a\"\n"},
		{"absolute link", Header + "\nl \"a\" \"/sys/b\"\n"},
		{"trailing junk", Header + "\nf \"a\" \"b\" c\n"},
		{"no space", Header + "\nf \"a\"\"b\"\n"},
		{"bad escape", Header + "\nf \"a\" \"\\q\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			qt.Assert(t, err, qt.ErrorIs, ErrFormat)
		})
	}
}

func TestCaptureMissingArray(t *testing.T) {
	_, err := CaptureArray(t.TempDir(), "md0")
	qt.Assert(t, err, qt.ErrorIs, os.ErrNotExist)
}
