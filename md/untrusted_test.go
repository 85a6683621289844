package md

// Tests of issue 15: members crafted from the real captures with the
// project's encoder (checksums valid, only the field under test hostile)
// must not blind the report on other arrays, size allocations, or
// resolve ambiguously.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/craft"
	"github.com/go-mdraid/mdraid/superblock"
)

// membersOf returns the kernel names of an array's members.
func membersOf(t testing.TB, m *Manager, array string) []string {
	t.Helper()
	a, err := m.Status(context.Background(), array)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mem := range a.Members() {
		out = append(out, mem.Device)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no members", array)
	}
	return out
}

// setAttr overwrites a sysfs attribute of the fixture tree.
func setAttr(t testing.TB, m *Manager, array, attr, value string) {
	t.Helper()
	if err := os.WriteFile(m.fs.Path("block", array, "md", attr), []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
}

// deactivate makes array look as mdadm -I leaves one: assembled, not
// running, with no raid_disks in sysfs.
func deactivate(t testing.TB, m *Manager, array string) {
	t.Helper()
	setAttr(t, m, array, "array_state", "inactive\n")
	setAttr(t, m, array, "level", "")
	setAttr(t, m, array, "raid_disks", "")
}

// craftMember rewrites the superblock of member dev (a kernel name) under the
// dev root.
func craftMember(t testing.TB, devRoot, dev string, mutate func(*superblock.Superblock)) {
	t.Helper()
	if err := craft.Superblock(filepath.Join(devRoot, dev), mutate); err != nil {
		t.Fatal(err)
	}
}

// checkOthersHealthy checks that every array but the crafted one reports
// in full.
func checkOthersHealthy(c *qt.C, r *Report, crafted string) {
	c.Helper()
	c.Assert(r.Arrays, qt.HasLen, 8)
	for _, a := range r.Arrays {
		if a.Device == crafted {
			continue
		}
		c.Check(a.Errors, qt.HasLen, 0, qt.Commentf("%s", a.Device))
		c.Check(a.Availability, qt.Equals, Online, qt.Commentf("%s", a.Device))
		c.Check(a.Slots, qt.HasLen, 2, qt.Commentf("%s", a.Device))
	}
}

// craftedCounts are the arrays of eight-arrays used for count tests, one
// per format family, with the slot limit of their format.
var craftedCounts = []struct {
	array   string
	version string
	limit   uint32
}{
	{"md3", "0.90", superblock.Disks090},
	{"md4", "1.2", superblock.MaxDev1},
}

// TestCraftedRaidDisks: an inactive array sizes its slot table from the
// newest member's superblock; a count past what the format holds is
// flagged on that member and ignored, and the other arrays still report.
func TestCraftedRaidDisks(t *testing.T) {
	for _, tt := range craftedCounts {
		for _, n := range []uint32{tt.limit + 1, 10_000_000, 0xffffffff} {
			c := qt.New(t)
			m, _, dev := eightArrays(t)
			victims := membersOf(t, m, tt.array)
			deactivate(t, m, tt.array)
			craftMember(t, dev, victims[0], func(sb *superblock.Superblock) {
				sb.RaidDisks = n
				sb.Events += 10 // the newest superblock
			})
			r, err := m.Discover(context.Background())
			c.Assert(err, qt.IsNil)
			checkOthersHealthy(c, r, tt.array)
			var a Array
			for _, x := range r.Arrays {
				if x.Device == tt.array {
					a = x
				}
			}
			c.Assert(a.Device, qt.Equals, tt.array)
			c.Check(a.RaidDisks, qt.Equals, 0, qt.Commentf("raid_disks %d", n))
			c.Check(len(a.Slots), qt.Equals, 0)
			c.Check(strings.Join(a.Errors, "\n"), qt.Contains, fmt.Sprintf("exceeds the %s limit of %d slots", tt.version, tt.limit))
			mem, _ := a.Find(victims[0])
			c.Assert(mem, qt.Not(qt.IsNil))
			c.Check(mem.Error, qt.Contains, "raid_disks")
			other, _ := a.Find(victims[1])
			c.Assert(other, qt.Not(qt.IsNil))
			c.Check(other.Error, qt.Equals, "")
		}
	}
}

// TestCraftedRaidDisksInLimit: a count the format allows is used.
func TestCraftedRaidDisksInLimit(t *testing.T) {
	for _, tt := range craftedCounts {
		c := qt.New(t)
		m, _, dev := eightArrays(t)
		victims := membersOf(t, m, tt.array)
		deactivate(t, m, tt.array)
		craftMember(t, dev, victims[0], func(sb *superblock.Superblock) { sb.RaidDisks = tt.limit; sb.Events += 10 })
		a, err := m.Status(context.Background(), tt.array)
		c.Assert(err, qt.IsNil)
		c.Check(a.RaidDisks, qt.Equals, int(tt.limit))
		c.Check(a.Slots, qt.HasLen, int(tt.limit))
		c.Check(a.Errors, qt.HasLen, 0)
	}
}

// TestSysfsRaidDisksBound: garbage in sysfs raid_disks does not size an
// allocation either.
func TestSysfsRaidDisksBound(t *testing.T) {
	c := qt.New(t)
	m, _, _ := eightArrays(t)
	setAttr(t, m, "md3", "raid_disks", "4000000000\n")
	a, err := m.Status(context.Background(), "md3")
	c.Assert(err, qt.IsNil)
	c.Check(len(a.Slots) <= superblock.MaxDev1, qt.IsTrue, qt.Commentf("%d slots", len(a.Slots)))
	c.Check(strings.Join(a.Errors, "\n"), qt.Contains, "raid_disks")
}

// renameArray gives every member of array the set name full, as a
// crafted disk can.
func renameArray(t testing.TB, m *Manager, dev, array, full string) {
	t.Helper()
	for _, mem := range membersOf(t, m, array) {
		craftMember(t, dev, mem, func(sb *superblock.Superblock) {
			if err := sb.SetFullName(full); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestResolveAmbiguous: two arrays named alike are refused by name, with
// both listed, by every command that takes an array; device names and
// UUIDs stay unambiguous.
func TestResolveAmbiguous(t *testing.T) {
	c := qt.New(t)
	m, _, dev := eightArrays(t)
	md0, err := m.Status(context.Background(), "md0")
	c.Assert(err, qt.IsNil)
	c.Assert(md0.Name, qt.Not(qt.Equals), "")
	renameArray(t, m, dev, "md4", md0.Homehost+":"+md0.Name)

	for _, name := range []string{md0.Name, "md/" + md0.Name, "/dev/md/" + md0.Name, md0.Homehost + ":" + md0.Name} {
		_, err := m.resolve(name)
		c.Check(err, qt.ErrorIs, ErrAmbiguous, qt.Commentf("%s", name))
		var ae *ambiguousError
		if c.Check(err, qt.ErrorAs, &ae) {
			c.Check(ae.Arrays, qt.DeepEquals, []string{"md0", "md4"})
		}
		c.Check(err, qt.ErrorMatches, `.*md0 and md4.*`)
	}
	ctx := context.Background()
	_, err = m.Status(ctx, md0.Name)
	c.Check(err, qt.ErrorIs, ErrAmbiguous)
	c.Check(m.Fail(ctx, md0.Name, md0.Slots[0].Member.Device), qt.ErrorIs, ErrAmbiguous)
	c.Check(m.Remove(ctx, md0.Name, md0.Slots[0].Member.Device), qt.ErrorIs, ErrAmbiguous)
	c.Check(m.Run(ctx, md0.Name), qt.ErrorIs, ErrAmbiguous)
	_, err = m.PlanReplace(ctx, ReplaceRequest{Array: md0.Name, With: filepath.Join(dev, "nothing")})
	c.Check(err, qt.ErrorIs, ErrAmbiguous)

	for _, name := range []string{"md0", "/dev/md0", md0.UUID, strings.ToUpper(md0.UUID)} {
		got, err := m.resolve(name)
		c.Check(err, qt.IsNil, qt.Commentf("%s", name))
		c.Check(got, qt.Equals, "md0", qt.Commentf("%s", name))
	}

	// Two arrays with one UUID (a cloned disk) are ambiguous by UUID too.
	md4, err := m.Status(ctx, "md4")
	c.Assert(err, qt.IsNil)
	for _, mem := range membersOf(t, m, "md4") {
		craftMember(t, dev, mem, func(sb *superblock.Superblock) { sb.SetUUID = uuid.MustParse(md0.UUID) })
	}
	// The kernel that assembled md4 from those members shows their UUID
	// (a running array's is looked up there: identity).
	c.Assert(os.WriteFile(m.fs.Path("block", "md4", "md", "uuid"), []byte(md0.UUID+"\n"), 0o644), qt.IsNil)
	_, err = m.resolve(md0.UUID)
	c.Check(err, qt.ErrorIs, ErrAmbiguous, qt.Commentf("md4's md/uuid is md0's UUID"))
	store := &memStore{}
	c.Assert(store.Save(ctx, &Records{}), qt.IsNil)
	_, err = m.Heal(ctx, HealOptions{Store: store, Array: md0.UUID})
	c.Check(err, qt.ErrorIs, ErrAmbiguous)
	_, err = m.Heal(ctx, HealOptions{Store: store, Array: md4.Device})
	c.Check(err, qt.IsNil, qt.Commentf("a kernel name is never ambiguous"))
}

// TestHealHostileHomehost: a homehost that is not UTF-8 is recorded
// escaped; heal compares it in the same form, so the array is not taken
// for one that moved host.
func TestHealHostileHomehost(t *testing.T) {
	c := qt.New(t)
	missing := mirrorMissing()
	missing.Homehost = "h\xff"
	rec := healthyArray(2)
	rec.Homehost = "h\xff"
	ds := decideHeal(report(missing), recordsOf(t, rec), map[string][]string{byPathOf(1): {"vdc"}}, "/dev")
	c.Assert(ds, qt.HasLen, 1)
	c.Check(ds[0].Err, qt.IsNil)
	c.Check(ds[0].Device, qt.Equals, "vdc")
}

// TestResolveUnreadIdentity: an array with members none of whose
// superblocks can be read may carry any name: a lookup by name that
// matches one array is then refused as ambiguous, naming both; the kernel
// name still resolves.
func TestResolveUnreadIdentity(t *testing.T) {
	c := qt.New(t)
	m, _, dev := eightArrays(t)
	md0, err := m.Status(context.Background(), "md0")
	c.Assert(err, qt.IsNil)
	got, err := m.resolve(md0.Name)
	c.Assert(err, qt.IsNil)
	c.Assert(got, qt.Equals, "md0")
	for _, mem := range membersOf(t, m, "md4") {
		c.Assert(os.Truncate(filepath.Join(dev, mem), 0), qt.IsNil)
	}
	_, err = m.resolve(md0.Name)
	c.Check(err, qt.ErrorIs, ErrAmbiguous)
	var ae *ambiguousError
	if c.Check(err, qt.ErrorAs, &ae) {
		c.Check(ae.Arrays, qt.DeepEquals, []string{"md0"})
		c.Check(ae.Unread, qt.DeepEquals, []string{"md4"})
	}
	c.Check(err, qt.ErrorMatches, `.*the name of md4 cannot be read.*`)
	got, err = m.resolve("md0")
	c.Check(err, qt.IsNil)
	c.Check(got, qt.Equals, "md0")
}
