package md

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/sysfs"
)

// trustRig is the boot-mirror capture (homehost talos, name boot) with
// its array stopped, seen from a host called homehost, with block nodes
// for vda and vdb and a kernel that makes what assembly asks for.
func trustRig(t *testing.T, homehost string) (*Manager, *fakeAssembly, []string) {
	t.Helper()
	fc := fixture.Named(t, "boot-mirror")
	mapDir := filepath.Join(t.TempDir(), "mdadm")
	m := fixtureManager(t, fc, func(c *Config) { c.MapDir = mapDir; c.HomeHost = homehost; c.NoUdev = true })
	f := &fakeAssembly{}
	m.asm = f
	var nodes []string
	for _, kname := range []string{"vda", "vdb"} {
		b, err := os.ReadFile(m.fs.Path("class", "block", kname, "dev"))
		if err != nil {
			t.Fatal(err)
		}
		dn, err := sysfs.ParseDevNum(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		node := filepath.Join(t.TempDir(), kname)
		needMknod(t, mknodBlock(node, dn.Major, dn.Minor))
		nodes = append(nodes, node)
	}
	unassemble(t, m)
	f.hook = func(call string) error {
		fs := strings.Fields(call)
		if fs[0] == "AddDisk" {
			kname := map[string]string{"254:0": "vda", "254:16": "vdb"}[fs[2]]
			return kernelAssembly(t, m, kname, "none\n")(call)
		}
		return kernelAssembly(t, m, "", "")(call)
	}
	return m, f, nodes
}

// TestAssembleTrustsOnlyLocalArrays: the boot mirror, complete, is
// started read-write (RUN_ARRAY) under its short name only on the host
// its superblock names; on
// another host it is foreign: started read-auto, so that nothing is
// written to it until someone writes to the array, and named with its
// host ("talos:boot"), never taking the local name "boot".
func TestAssembleTrustsOnlyLocalArrays(t *testing.T) {
	for _, tt := range []struct {
		name, homehost string
		foreign        bool
	}{
		{"its own host", "talos", false},
		{"another host", "vmtest", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			m, f, nodes := trustRig(t, tt.homehost)
			res, err := m.Assemble(context.Background(), AssembleRequest{Devices: nodes})
			c.Assert(err, qt.IsNil)
			c.Assert(res.Added, qt.HasLen, 2, qt.Commentf("%q", f.calls))
			last := res.Added[1]
			c.Check(res.Added[0].Foreign, qt.Equals, tt.foreign)
			c.Check(last.Foreign, qt.Equals, tt.foreign)
			c.Assert(last.Started, qt.Equals, StartYes, qt.Commentf("%+v", last))
			c.Check(last.ReadAuto, qt.Equals, tt.foreign)
			start := "Start " + last.Array + " false"
			write := "RUN_ARRAY"
			if tt.foreign {
				start = "Start " + last.Array + " true"
				write = "array_state=read-auto"
			}
			c.Check(f.calls, qt.Contains, start)
			c.Check(last.Writes, qt.Contains, write)
			var links []string
			for _, call := range f.calls {
				if strings.HasPrefix(call, "MakeLink ") {
					links = append(links, filepath.Base(strings.Fields(call)[1]))
				}
			}
			want := []string{"boot"}
			if tt.foreign {
				want = []string{"talos:boot"}
			}
			c.Check(links, qt.DeepEquals, want, qt.Commentf("%q", f.calls))
		})
	}
}
