package md

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
)

// treeDigest is every name under the roots with its mode, its link
// target or a hash of its contents: what a call that changes nothing
// leaves as it was.
func treeDigest(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			v := info.Mode().String()
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				to, err := os.Readlink(p)
				if err != nil {
					return err
				}
				v += " -> " + to
			case info.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v += fmt.Sprintf(" %x", sha256.Sum256(b))
			}
			out[p] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// outcomes is every device's outcome of an Assemble call, as the rig's
// summary, skip reason or failure, in order.
func (rig *assembleRig) outcomes(res *AssembleResult) []string {
	var out []string
	for _, r := range res.Added {
		out = append(out, "added "+rig.summary(r))
	}
	for _, s := range res.Skipped {
		out = append(out, "skipped "+filepath.Base(s.Device)+": "+s.Reason.Error())
	}
	for _, f := range res.Failed {
		out = append(out, "failed "+filepath.Base(f.Device)+": "+f.Err.Error())
	}
	for _, n := range res.NotFound {
		out = append(out, "not found "+n)
	}
	return out
}

// TestAssembleDryRunAgreesWithTheRun (issue 31): a dry run of Assemble
// changes nothing (no call through the door, no file under sysfs, /dev or
// the map directory, not even the map's lock file), and reports exactly
// what the real run then does: the same devices added to the same
// arrays, numbers and links, with the same writes in the same order, the
// same start states, and the same refusals. Cases: every array of the
// rig, --run over incomplete arrays, a slot claimed by two devices, a
// spare held back from an array that would start degraded, and arrays
// half assembled before the call (the dry run joins what the kernel
// already has).
func TestAssembleDryRunAgreesWithTheRun(t *testing.T) {
	copyOf := func(t *testing.T, rig *assembleRig) {
		src, err := rig.m.probe("vda")
		if err != nil {
			t.Fatal(err)
		}
		rewriteImage(t, rig.m, "vdk", func(sb *superblock.Superblock, _ *superblock.Bitmap) {
			sb.SetUUID, sb.DeviceUUID, sb.DevNumber, sb.Events = src.SetUUID, src.DeviceUUID, src.DevNumber, src.Events
			sb.DevRoles = slices.Clone(src.DevRoles)
		})
		rig.m.forgetProbes()
	}
	spare := func(t *testing.T, rig *assembleRig) {
		a0, err := rig.m.probe("vda")
		if err != nil {
			t.Fatal(err)
		}
		rewriteImage(t, rig.m, "vdi", func(sb *superblock.Superblock, bm *superblock.Bitmap) {
			if bm != nil {
				bm.UUID = a0.SetUUID
			}
			sb.SetUUID, sb.CTime, sb.Size, sb.Events = a0.SetUUID, a0.CTime, a0.Size, a0.Events
			if err := sb.SetFullName(a0.FullName()); err != nil {
				t.Fatal(err)
			}
			sb.DevNumber = 2
			sb.DevRoles = slices.Clone(a0.DevRoles)
			sb.DevRoles[2] = superblock.RoleSpare
		})
		rig.m.forgetProbes()
	}
	half := func(t *testing.T, rig *assembleRig) {
		// One member of each of three arrays, assembled for real: they
		// wait for the rest.
		res, err := rig.m.Assemble(context.Background(), AssembleRequest{Devices: []string{rig.nodes["vda"], rig.nodes["vde"], rig.nodes["vdg"]}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Added) != 3 {
			t.Fatalf("half: %v", rig.outcomes(res))
		}
		rig.f.calls = nil
	}
	for _, tt := range []struct {
		name  string
		prep  func(*testing.T, *assembleRig)
		devs  []string // nil: every device
		req   AssembleRequest
		added int // devices the run adds, at least
	}{
		{name: "every array", added: 12},
		{name: "run", devs: []string{"vda", "vde", "vdg", "vdh", "vdm"}, req: AssembleRequest{Run: true}, added: 3},
		{name: "waiting", devs: []string{"vda", "vde", "vdg", "vdh", "vdm"}, added: 3},
		{name: "conflict", prep: copyOf, added: 8},
		{name: "spare held back", prep: spare, devs: []string{"vda", "vdi"}, added: 1},
		{name: "spare of a whole array", prep: spare, devs: []string{"vda", "vdb", "vdi"}, added: 3},
		{name: "half assembled", prep: half, added: 9},
		{name: "only a0", req: AssembleRequest{Array: "a0"}, added: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			rig := newAssembleRig(t, nil)
			if tt.prep != nil {
				tt.prep(t, rig)
			}
			req := tt.req
			if tt.devs == nil {
				req.Devices = rig.devices()
			} else {
				for _, k := range tt.devs {
					req.Devices = append(req.Devices, rig.nodes[k])
				}
			}
			roots := []string{rig.m.fs.Path(), rig.m.devRoot, filepath.Dir(rig.m.mapDir)}
			before := treeDigest(t, roots...)
			dreq := req
			dreq.DryRun = true
			dry, err := rig.m.Assemble(context.Background(), dreq)
			c.Assert(err, qt.IsNil)
			c.Check(dry.DryRun, qt.IsTrue)
			c.Check(rig.f.calls, qt.HasLen, 0, qt.Commentf("the dry run called the door: %v", rig.f.calls))
			c.Check(treeDigest(t, roots...), qt.DeepEquals, before, qt.Commentf("the dry run changed a file"))
			for _, r := range dry.Added {
				c.Check(r.DryRun, qt.IsTrue)
			}

			res, err := rig.m.Assemble(context.Background(), req)
			c.Assert(err, qt.IsNil)
			c.Check(res.DryRun, qt.IsFalse)
			c.Check(len(res.Added) >= tt.added, qt.IsTrue, qt.Commentf("the run added %d devices: %v", len(res.Added), rig.outcomes(res)))
			c.Check(len(rig.f.calls) > 0, qt.IsTrue)
			c.Check(rig.outcomes(dry), qt.DeepEquals, rig.outcomes(res))
		})
	}
}

// TestIncrementalDryRunAgreesWithTheRun: device after device, a dry run
// of Incremental changes nothing and says what the real call then does,
// including the start of an array by its last member.
func TestIncrementalDryRunAgreesWithTheRun(t *testing.T) {
	c := qt.New(t)
	rig := newAssembleRig(t, nil)
	roots := []string{rig.m.fs.Path(), rig.m.devRoot, filepath.Dir(rig.m.mapDir)}
	started := 0
	for _, k := range []string{"vda", "vdb", "vde", "vdc", "vdf"} {
		before := treeDigest(t, roots...)
		calls := len(rig.f.calls)
		dry, derr := rig.m.Incremental(context.Background(), IncrementalRequest{Device: rig.nodes[k], DryRun: true})
		c.Check(rig.f.calls[calls:], qt.HasLen, 0, qt.Commentf("%s: the dry run called the door", k))
		c.Check(treeDigest(t, roots...), qt.DeepEquals, before, qt.Commentf("%s: the dry run changed a file", k))
		res, err := rig.m.Incremental(context.Background(), IncrementalRequest{Device: rig.nodes[k]})
		c.Check(fmt.Sprint(derr), qt.Equals, fmt.Sprint(err), qt.Commentf(k))
		if err != nil {
			continue
		}
		c.Assert(dry, qt.IsNotNil, qt.Commentf(k))
		c.Check(dry.DryRun, qt.IsTrue)
		c.Check(rig.summary(dry), qt.Equals, rig.summary(res))
		c.Check(dry.Writes, qt.DeepEquals, res.Writes, qt.Commentf(k))
		if res.Started == StartYes {
			started++
		}
	}
	c.Check(started, qt.Equals, 2)
}
