package md

import (
	"crypto/sha1"
	"encoding/binary"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
)

func sb1(name string) *superblock.Superblock {
	s := &superblock.Superblock{Version: superblock.Version12, Level: superblock.LevelRAID1, RaidDisks: 2}
	copy(s.SetName[:], name)
	return s
}

func TestTrust1x(t *testing.T) {
	c := qt.New(t)
	c.Check(trusted(sb1("talos:boot"), "talos"), qt.IsTrue)
	c.Check(trusted(sb1("talos2:boot"), "talos"), qt.IsFalse)
	c.Check(trusted(sb1("boot"), "talos"), qt.IsFalse)
	c.Check(trusted(sb1("any:boot"), "talos"), qt.IsTrue)
	c.Check(trusted(sb1("talos:boot"), ""), qt.IsFalse)
	c.Check(arrayName(sb1("talos:boot"), true), qt.Equals, "boot")
	c.Check(arrayName(sb1("other:data"), false), qt.Equals, "other:data")
}

func TestTrust090(t *testing.T) {
	c := qt.New(t)
	// mdadm --create --homehost=H copies the first 8 bytes of SHA-1(H)
	// into set_uuid2 and set_uuid3 as they lie in memory: on a
	// little-endian host the words are those bytes read little-endian.
	sum := sha1.Sum([]byte("talos"))
	s := &superblock.Superblock{Version: superblock.Version090, ByteOrder: binary.LittleEndian, MDMinor: 5}
	binary.BigEndian.PutUint32(s.SetUUID[8:12], binary.LittleEndian.Uint32(sum[0:4]))
	binary.BigEndian.PutUint32(s.SetUUID[12:16], binary.LittleEndian.Uint32(sum[4:8]))
	c.Check(trusted(s, "talos"), qt.IsTrue)
	c.Check(trusted(s, "other"), qt.IsFalse)
	c.Check(arrayName(s, true), qt.Equals, "5")
}

func TestChooseNumber(t *testing.T) {
	c := qt.New(t)
	busy := map[int]bool{127: true, 5: true}
	f := func(n int) bool { return busy[n] }
	c.Check(chooseNumber("boot", true, f), qt.Equals, 126)
	c.Check(chooseNumber("3", true, f), qt.Equals, 3)
	c.Check(chooseNumber("md3", true, f), qt.Equals, 3)
	c.Check(chooseNumber("3", false, f), qt.Equals, 126) // foreign: no preferred number
	c.Check(chooseNumber("5", true, f), qt.Equals, 126)  // busy: fall back
	c.Check(chooseNumber("03", true, f), qt.Equals, 126) // not a canonical number
	all := func(n int) bool { return n <= 127 }
	c.Check(chooseNumber("x", true, all), qt.Equals, 511)
	c.Check(chooseNumber("x", true, func(int) bool { return true }), qt.Equals, -1)
}

func TestChooseLink(t *testing.T) {
	c := qt.New(t)
	taken := map[string]bool{"boot": true, "data_0": true}
	f := func(s string) bool { return taken[s] }
	c.Check(chooseLink("r5", true, f), qt.Equals, "r5")
	c.Check(chooseLink("boot", true, f), qt.Equals, "boot_0")
	c.Check(chooseLink("other:data", false, f), qt.Equals, "other:data")
	c.Check(chooseLink("data", false, f), qt.Equals, "data_1") // foreign, no host: always suffixed
	c.Check(chooseLink("3", false, f), qt.Equals, "3_0")
	c.Check(chooseLink("", true, f), qt.Equals, "")
}

func member1(slot int, events uint64, roles ...superblock.Role) attached {
	s := &superblock.Superblock{Version: superblock.Version12, Level: superblock.LevelRAID1, RaidDisks: uint32(len(roles)), Events: events, DevRoles: roles, DevNumber: uint32(slot)}
	if slot < 0 {
		s.DevNumber = uint32(len(roles))
		s.DevRoles = append(s.DevRoles, superblock.RoleSpare)
	}
	return attached{Name: "m" + string(rune('0'+slot)), SB: s}
}

func TestCountActive(t *testing.T) {
	c := qt.New(t)
	// Three members, all current: 3 of 3.
	r := countActive([]attached{member1(0, 10, 0, 1, 2), member1(1, 10, 0, 1, 2), member1(2, 10, 0, 1, 2)})
	c.Check(r.Active, qt.Equals, 3)
	c.Check(r.Expected, qt.Equals, 3)
	// One behind counts (the kernel's allowance of one); two behind not.
	r = countActive([]attached{member1(0, 10, 0, 1, 2), member1(1, 9, 0, 1, 2), member1(2, 8, 0, 1, 2)})
	c.Check(r.Active, qt.Equals, 2)
	c.Check(r.Avail, qt.DeepEquals, []bool{true, true, false})
	// A newer member arriving later becomes the reference.
	r = countActive([]attached{member1(2, 8, 0, 1, 2), member1(0, 12, 0, 1, 0xfffe)})
	c.Check(r.Best.Events, qt.Equals, uint64(12))
	c.Check(r.Active, qt.Equals, 1)
	c.Check(r.Expected, qt.Equals, 2) // the freshest says slot 2 failed
	// The stale member that the freshest marks failed is not counted,
	// and a member whose own map says the best one failed is dropped.
	r = countActive([]attached{member1(0, 12, 0, 1, 0xfffe), member1(1, 12, 0, 1, 0xfffe), member1(2, 11, 0xfffe, 1, 2)})
	c.Check(r.Active, qt.Equals, 2)
	c.Check(r.Removed, qt.DeepEquals, []string{"m2"})
	// mdadm's unsigned arithmetic: a first member with events 0 makes
	// every later one "far behind" (0-1 wraps), so only it counts.
	r = countActive([]attached{member1(2, 0, 0, 1, 2), member1(0, 5, 0, 1, 0xfffe), member1(1, 5, 0, 1, 0xfffe)})
	c.Check(r.Active, qt.Equals, 1)
	c.Check(r.Expected, qt.Equals, 3)
	c.Check(r.Best.Events, qt.Equals, uint64(0))
	// Spares do not count.
	r = countActive([]attached{member1(0, 5, 0, 0xfffe), member1(-1, 5, 0, 0xfffe)})
	c.Check(r.Active, qt.Equals, 1)
	c.Check(r.Expected, qt.Equals, 1)
}

func TestEnough(t *testing.T) {
	c := qt.New(t)
	c.Check(enough(superblock.LevelRAID1, 0, false, []bool{false, true}), qt.IsTrue)
	c.Check(enough(superblock.LevelRAID1, 0, true, []bool{false, false}), qt.IsFalse)
	c.Check(enough(superblock.LevelRAID5, 2, true, []bool{true, false, true}), qt.IsTrue)
	c.Check(enough(superblock.LevelRAID5, 2, false, []bool{true, false, true}), qt.IsFalse) // dirty degraded
	c.Check(enough(superblock.LevelRAID6, 2, true, []bool{true, false, false, true}), qt.IsTrue)
	c.Check(enough(superblock.LevelRAID0, 0, true, []bool{true, false}), qt.IsFalse)
	c.Check(enough(superblock.LevelRAID4, 0, false, []bool{true, true, false}), qt.IsTrue) // parity missing
	c.Check(enough(superblock.LevelRAID10, 0x102, true, []bool{true, false, false, true}), qt.IsTrue)
	c.Check(enough(superblock.LevelRAID10, 0x102, true, []bool{false, false, true, true}), qt.IsFalse)
	c.Check(enough(superblock.Level(99), 0, true, []bool{true}), qt.IsFalse)
}

func TestMismatch(t *testing.T) {
	c := qt.New(t)
	a, b := sb1("h:x"), sb1("h:x")
	c.Check(mismatch(a, b), qt.Equals, "")
	b.RaidDisks = 3
	c.Check(mismatch(a, b), qt.Equals, "raid_disks")
	b = sb1("h:x")
	b.SetUUID[0] = 1
	c.Check(mismatch(a, b), qt.Equals, "UUID")
}

func TestMatchesArray(t *testing.T) {
	c := qt.New(t)
	s := sb1("talos:boot")
	copy(s.SetUUID[:], []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00})
	for _, w := range []string{"boot", "talos:boot", "11223344:55667788:99aabbcc:ddeeff00", "11223344-5566-7788-99aa-bbccddeeff00"} {
		c.Check(matchesArray(s, w, "talos"), qt.IsTrue, qt.Commentf("%s", w))
	}
	for _, w := range []string{"boo", "other:boot", "11223344:55667788:99aabbcc:ddeeff01"} {
		c.Check(matchesArray(s, w, "talos"), qt.IsFalse, qt.Commentf("%s", w))
	}
	// A foreign array is matched by its whole name.
	c.Check(matchesArray(s, "talos:boot", "other"), qt.IsTrue)
}
