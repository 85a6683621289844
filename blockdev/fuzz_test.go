package blockdev

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Bounds for the fuzzed trees.
const (
	maxTreeManifest = 32 << 10
	maxTreeEntries  = 200
	maxTreePath     = 1024
)

// fuzzTree builds the tree a fuzzed manifest describes below a new
// temporary directory: its well-formed lines that stay inside the tree
// (see sysfstree.Contain), each created if it can be. It reports false
// when nothing is left or the tree would be too large.
func fuzzTree(t *testing.T, manifest []byte) (sysfs.FS, bool) {
	if len(manifest) > maxTreeManifest {
		return sysfs.FS{}, false
	}
	entries := sysfstree.Contain(sysfstree.ParseLoose(manifest))
	if len(entries) == 0 || len(entries) > maxTreeEntries {
		return sysfs.FS{}, false
	}
	for _, e := range entries {
		if len(e.Path) > maxTreePath {
			return sysfs.FS{}, false
		}
	}
	root := t.TempDir()
	sysfstree.MaterializeLoose(root, entries)
	fsys, err := sysfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, true
}

// walkTimeout bounds one walk over a fuzzed tree. A walk reads a few
// hundred files at most; a loop never ends.
const walkTimeout = 10 * time.Second

// within fails the test if f does not return in time.
func within(t testing.TB, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("no result after %v: the walk does not end", d)
	}
}

// blockNames returns the names in class/block and block of the tree, and
// a few fixed ones.
func blockNames(fsys sysfs.FS) []string {
	names := map[string]bool{"vdb": true, "sda": true, "nvme1n2": true}
	for _, d := range []string{"class/block", "block"} {
		ents, _ := os.ReadDir(fsys.Path(d))
		for _, e := range ents {
			names[e.Name()] = true
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out
}

// checkWalk describes every block device of the tree and computes its
// by-path identity, and fails on a result the documentation rules out.
func checkWalk(t testing.TB, fsys sysfs.FS, devRoot string) {
	t.Helper()
	for _, name := range blockNames(fsys) {
		if _, err := Lookup(fsys, devRoot, name); err != nil && errors.Is(err, ErrNoPathID) {
			t.Fatalf("Lookup %s: %v", name, err)
		}
		id, err := PathID(fsys, name)
		var pe *PathIDError
		switch {
		case err == nil:
			if id == "" {
				t.Fatalf("PathID %s: empty identity without an error", name)
			}
		case errors.As(err, &pe):
			if pe.Partial != id {
				t.Fatalf("PathID %s returned %q, error has partial %q", name, id, pe.Partial)
			}
		case id != "":
			t.Fatalf("PathID %s returned %q with %v", name, id, err)
		}
		if _, err := CheckByPath(fsys, devRoot, name); err != nil {
			_ = err.Error()
		}
	}
}

// fuzzSeeds returns small trees, so that the fuzzer runs fast: the
// synthetic tree of TestPathID cut into one tree per top-level device
// (with the class and dev links leading into it), the odd trees, and the
// smallest real capture, cut down to what the walk reads.
func fuzzSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	groups := map[string][]sysfstree.Entry{}
	top := func(p string) string {
		el := strings.SplitN(p, "/", 4)
		if len(el) < 3 || el[0] != "devices" {
			return ""
		}
		return strings.Join(el[:3], "/")
	}
	for _, e := range sysfstree.ParseLoose([]byte(manifest)) {
		key := top(e.Path)
		if key == "" && e.Kind == sysfstree.Link {
			key = top(path.Join(path.Dir(e.Path), e.Data))
		}
		groups[key] = append(groups[key], e)
	}
	var out [][]byte
	add := func(entries []sysfstree.Entry) {
		var b bytes.Buffer
		if err := sysfstree.Write(&b, entries); err != nil {
			tb.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	for _, g := range groups {
		add(g)
	}
	for _, m := range oddTrees {
		add(sysfstree.ParseLoose([]byte(m)))
	}
	keep := map[string]bool{"uevent": true, "dev": true, "size": true, "partition": true, "serial": true}
	entries, err := sysfstree.ParseFile(fixture.Named(tb, "raid1-v1.2").Path("sysfs.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	var small []sysfstree.Entry
	for _, e := range entries {
		if strings.Contains(e.Path, "/md/") || strings.Contains(e.Path, "/queue/") ||
			e.Kind == sysfstree.File && !keep[path.Base(e.Path)] {
			continue
		}
		small = append(small, e)
	}
	add(small)
	return out
}

// FuzzPathID walks arbitrary sysfs trees, seeded from the real captures
// and the trees of TestPathID: symlink loops, dangling links, garbage
// uevent files, very deep chains. Lookup, PathID and CheckByPath end,
// and their results agree with the documentation.
func FuzzPathID(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	devRoot := f.TempDir()
	if err := os.MkdirAll(filepath.Join(devRoot, "disk", "by-path"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("../../vdb", filepath.Join(devRoot, "disk", "by-path", "pci-0000:00:10.0")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, manifest []byte) {
		fsys, ok := fuzzTree(t, manifest)
		if !ok {
			return
		}
		within(t, walkTimeout, func() { checkWalk(t, fsys, devRoot) })
	})
}

// oddTrees are hostile or broken trees, each with a disk vdb (or nvme1n2)
// somewhere in it.
var oddTrees = map[string]string{
	"link loop": `l "class/block/vdb" "../../devices/a/vdb"
l "devices/a/vdb" "../b/vdb"
l "devices/b/vdb" "../a/vdb"
`,
	"subsystem loop": dev("devices/pci0000:00/0000:00:10.0", "pci", "") +
		blk("devices/pci0000:00/0000:00:10.0/virtio2/block/vdb", "254:16", 2048, 0) +
		`l "devices/pci0000:00/0000:00:10.0/virtio2/subsystem" "subsystem"
f "devices/pci0000:00/0000:00:10.0/virtio2/uevent" ""
`,
	"missing links": `f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/dev" "254:16\n"
f "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/size" "2048\n"
l "class/block/vdb" "../../devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
l "devices/pci0000:00/0000:00:10.0/subsystem" "../../../bus/nowhere/pci"
l "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb/device" "../../../nowhere"
`,
	"garbage uevent": dev("devices/pci0000:00/0000:00:10.0", "pci", "") +
		blk("devices/pci0000:00/0000:00:10.0/host0/target0:0:0/0:0:0:0/block/vdb", "254:16", 2048, 0) +
		dev("devices/pci0000:00/0000:00:10.0/host0", "scsi", "scsi_host") +
		fmt.Sprintf("f %q %q\n", "devices/pci0000:00/0000:00:10.0/host0/target0:0:0/0:0:0:0/uevent",
			"DEVTYPE=scsi_device\x00\xff=\n==\nDEVTYPE\n"+strings.Repeat("K=", 2000)) +
		`l "devices/pci0000:00/0000:00:10.0/host0/target0:0:0/0:0:0:0/subsystem" "../../../../../../bus/scsi"
`,
	"deep chain": deepChain(120),
	// class/nvme/nvme1 leads back below the subsystem the walk came
	// from; following it must not start the walk over.
	"nvme controller inside the subsystem": dev("devices/virtual/nvme-subsystem/nvme-subsys1", "nvme-subsystem", "") +
		blk("devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2", "259:5", 2048, 0) +
		attr("devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2", "nsid", "2") +
		`d "devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2/x"
l "class/nvme/nvme1" "../../devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2/x"
`,
	// The same with the controller being the subsystem device itself.
	"nvme controller is the subsystem": dev("devices/virtual/nvme-subsystem/nvme-subsys1", "nvme-subsystem", "") +
		blk("devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2", "259:5", 2048, 0) +
		attr("devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2", "nsid", "2") +
		`l "class/nvme/nvme1" "../../devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n2"
`,
}

// deepChain is a PCI disk below n nested pass-through devices.
func deepChain(n int) string {
	dir := "devices/pci0000:00/0000:00:10.0"
	s := dev(dir, "pci", "")
	for i := range n {
		dir += fmt.Sprintf("/d%d", i)
		s += dev(dir, "mmc", "")
	}
	s += dev(dir+"/virtio2", "virtio", "")
	return s + blk(dir+"/virtio2/block/vdb", "254:16", 2048, 0)
}

// TestOddTrees: every walk over a broken or hostile tree ends with a
// result or a typed error.
func TestOddTrees(t *testing.T) {
	for name, m := range oddTrees {
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			fsys := materialize(c, c.TempDir(), m)
			within(t, walkTimeout, func() { checkWalk(t, fsys, "/dev") })
		})
	}
}

// TestOddTreeResults pins what the odd trees give. The nvme cases loop
// for ever without the walk's visited set.
func TestOddTreeResults(t *testing.T) {
	tests := []struct {
		tree, dev string
		want      string
		isErr     error // nil: no error
	}{
		{"missing links", "vdb", "pci-0000:00:10.0", ErrNoPathID},
		{"deep chain", "vdb", "pci-0000:00:10.0", nil},
		{"nvme controller inside the subsystem", "nvme1n2", "nvme-2", ErrNoPathID},
		{"nvme controller is the subsystem", "nvme1n2", "nvme-2", ErrNoPathID},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			c := qt.New(t)
			fsys := materialize(c, c.TempDir(), oddTrees[tt.tree])
			var id string
			var err error
			within(t, walkTimeout, func() { id, err = PathID(fsys, tt.dev) })
			c.Check(id, qt.Equals, tt.want)
			if tt.isErr != nil {
				c.Check(err, qt.ErrorIs, tt.isErr)
			} else {
				c.Check(err, qt.IsNil)
			}
		})
	}
	// A link loop is an I/O error from the resolver, not "no such device".
	c := qt.New(t)
	fsys := materialize(c, c.TempDir(), oddTrees["link loop"])
	for _, err := range []error{
		func() error { _, err := Lookup(fsys, "/dev", "vdb"); return err }(),
		func() error { _, err := PathID(fsys, "vdb"); return err }(),
	} {
		var pe *fs.PathError
		c.Check(errors.As(err, &pe), qt.IsTrue, qt.Commentf("%v", err))
		c.Check(errors.Is(err, fs.ErrNotExist), qt.IsFalse)
	}
}
