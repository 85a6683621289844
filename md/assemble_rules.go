package md

import (
	"crypto/sha1"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/go-mdraid/mdraid/superblock"
)

// This file holds the pure rules of assembly, as mdadm applies them
// without mdadm.conf (docs/assembly.md §2): trust, naming, numbering,
// which members count, and when an array may start. Nothing here reads
// or writes the system.

// isLocal is mdadm's match_home for homehost h: a 1.x array is local
// when its name is "h:..." (0 < len(h) < 32); a 0.90 array when words 2
// and 3 of its UUID, as stored, are the first 8 bytes of SHA-1(h).
func isLocal(sb *superblock.Superblock, h string) bool {
	if h == "" {
		return false
	}
	if sb.Version == superblock.Version090 {
		sum := sha1.Sum([]byte(h))
		var raw [8]byte
		bo := sb.ByteOrder
		if bo == nil {
			bo = binary.LittleEndian
		}
		bo.PutUint32(raw[0:4], binary.BigEndian.Uint32(sb.SetUUID[8:12]))
		bo.PutUint32(raw[4:8], binary.BigEndian.Uint32(sb.SetUUID[12:16]))
		return string(raw[:]) == string(sum[:8])
	}
	name := sb.FullName()
	l := len(h)
	return l < 32 && len(name) > l && name[l] == ':' && name[:l] == h
}

// trusted is mdadm's trust decision: local for the homehost, or for
// "any" (an array created with --homehost=any).
func trusted(sb *superblock.Superblock, homehost string) bool {
	return isLocal(sb, homehost) || isLocal(sb, "any")
}

// arrayName is the name mdadm works with: the 1.x set_name, without its
// "host:" when the array is local; for 0.90 the decimal preferred minor.
func arrayName(sb *superblock.Superblock, local bool) string {
	if sb.Version == superblock.Version090 {
		return strconv.FormatUint(uint64(sb.MDMinor), 10)
	}
	n := sb.FullName()
	n, _, _ = strings.Cut(n, "\n")
	if local {
		if _, rest, ok := strings.Cut(n, ":"); ok {
			return rest
		}
	}
	return n
}

// preferredNumber is the md number a local array's name asks for
// ("3", "md3", "/dev/md3", "md/3"), or -1.
func preferredNumber(name string) int {
	s := strings.TrimPrefix(name, "/dev/")
	s = strings.TrimPrefix(s, "md/")
	s = strings.TrimPrefix(s, "md")
	if s == "" || len(s) > 7 {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s || n >= 1<<20 {
		return -1
	}
	return n
}

// chooseNumber picks the md number for a new array: a local array's
// preferred number unless it is busy, else mdadm's find_free_devnm
// order, md127 down to md0 and then md511 down to md128. busy says
// whether mdN exists. It returns -1 when every number is busy.
func chooseNumber(name string, local bool, busy func(int) bool) int {
	if local {
		if n := preferredNumber(name); n >= 0 && !busy(n) {
			return n
		}
	}
	for n := 127; n >= 0; n-- {
		if !busy(n) {
			return n
		}
	}
	for n := 511; n >= 128; n-- {
		if !busy(n) {
			return n
		}
	}
	return -1
}

// chooseLink returns the /dev/md/ link name for an array named name
// (already made safe by linkName), as mdopen.c chooses it: taken says
// whether a live map entry uses /dev/md/X. A local name, or a foreign
// one with a ':', is suffixed only on conflict; any other foreign name
// always is ("data" -> "data_0"). The suffix is "_N".
func chooseLink(name string, local bool, taken func(string) bool) string {
	if name == "" {
		return ""
	}
	always := !local && !strings.Contains(name, ":")
	if !always && !taken(name) {
		return name
	}
	for i := 0; i < 1000; i++ {
		c := name + "_" + strconv.Itoa(i)
		if len(c) > 200 {
			return ""
		}
		if !taken(c) {
			return c
		}
	}
	return ""
}

// metadataText is the metadata version as the map file and sysfs write
// it: "0.90", "1.0", "1.1" or "1.2".
func metadataText(sb *superblock.Superblock) string {
	switch sb.Version {
	case superblock.Version090:
		return "0.90"
	case superblock.Version10:
		return "1.0"
	case superblock.Version11:
		return "1.1"
	}
	return "1.2"
}

// arrayInfoVersion is what SET_ARRAY_INFO carries for sb: 0.90 with its
// own minor version (90, 91 while reshaping); 1.x with the location.
func arrayInfoVersion(sb *superblock.Superblock) (major, minor int) {
	switch sb.Version {
	case superblock.Version090:
		if sb.MinorVersion == 0 {
			return 0, 90
		}
		return 0, int(sb.MinorVersion)
	case superblock.Version10:
		return 1, 0
	case superblock.Version11:
		return 1, 1
	}
	return 1, 2
}

// inSync is mdadm's SYNC bit of a member's own superblock: it names
// itself in a slot.
func inSync(sb *superblock.Superblock) bool {
	if sb.Version == superblock.Version090 {
		return sb.ThisDisk.State&superblock.DiskSync != 0
	}
	r := sb.Role()
	return r.IsSlot()
}

// slotOf is the slot a member's own superblock gives it, or -1.
func slotOf(sb *superblock.Superblock) int {
	if sb.Version == superblock.Version090 {
		if sb.ThisDisk.State&superblock.DiskSync == 0 {
			return -1
		}
		return int(sb.ThisDisk.RaidDisk)
	}
	if r := sb.Role(); r.IsSlot() {
		return int(r)
	}
	return -1
}

// workingSlots is the superblock's map of working slots, and how many
// there are (mdadm's working_disks): for 1.x the roles below raid_disks
// in dev_roles; for 0.90 the descriptors active and in sync, not faulty.
func workingSlots(sb *superblock.Superblock) ([]bool, int) {
	n := int(sb.RaidDisks)
	if n > int(superblock.RoleMax) {
		n = int(superblock.RoleMax)
	}
	m := make([]bool, n)
	count := 0
	mark := func(slot int) {
		if slot >= 0 && slot < n {
			if !m[slot] {
				count++
			}
			m[slot] = true
		}
	}
	if sb.Version == superblock.Version090 {
		for _, d := range sb.Disks {
			if d.State&(superblock.DiskActive|superblock.DiskSync) == superblock.DiskActive|superblock.DiskSync && d.State&superblock.DiskFaulty == 0 {
				mark(int(d.RaidDisk))
			}
		}
	} else {
		for _, r := range sb.DevRoles {
			if r.IsSlot() {
				mark(int(r))
			}
		}
	}
	return m, count
}

// attached is one member bound to an array being assembled, with its
// superblock.
type attached struct {
	Name string // kernel name of the member device
	SB   *superblock.Superblock
}

// counted is count_active's result.
type counted struct {
	// Avail marks the slots with a counted member.
	Avail []bool
	// Active is the number of counted slots.
	Active int
	// Best is the freshest member, whose superblock says how many
	// members the array expects (Expected) and whether it is clean.
	Best     *superblock.Superblock
	Expected int
	// Removed are members that the freshest says failed, or spares
	// newer than it: mdadm detaches them before starting.
	Removed []string
}

// countActive is mdadm's count_active (docs/assembly.md §2.3) over the
// members attached so far, in sysfs order: members whose own superblock
// names a slot count when their events are the highest seen, or one
// less (the kernel's allowance of one); a member two behind does not.
func countActive(ms []attached) counted {
	var c counted
	var max uint64
	weight := map[int]int{}
	first := true
	for _, m := range ms {
		sb := m.SB
		if !inSync(sb) {
			continue
		}
		slot := slotOf(sb)
		ev := sb.Events
		switch {
		case first:
			first = false
			max = ev
			weight[slot] = 2
			c.Best = sb
		case ev == max:
			weight[slot] = 2
		case ev+1 == max:
			if weight[slot] == 0 {
				weight[slot] = 1
			}
		case ev < max:
		case ev == max+1:
			for s, w := range weight {
				if w > 0 {
					weight[s] = w - 1
				}
			}
			weight[slot] = 2
			max = ev
			c.Best = sb
		default:
			weight = map[int]int{slot: 2}
			max = ev
			c.Best = sb
		}
	}
	if c.Best == nil {
		return c
	}
	n := int(c.Best.RaidDisks)
	if n > int(superblock.RoleMax) {
		n = int(superblock.RoleMax)
	}
	_, c.Expected = workingSlots(c.Best)
	// The first slot with full weight: a member whose own map says that
	// slot failed thinks the best device failed, and is dropped.
	b := -1
	for s := 0; s < n; s++ {
		if weight[s] == 2 {
			b = s
			break
		}
	}
	c.Avail = make([]bool, n)
	for _, m := range ms {
		sb := m.SB
		if !inSync(sb) {
			if sb.Events > max {
				c.Removed = append(c.Removed, m.Name)
			}
			continue
		}
		if sb.Events+1 < max {
			continue
		}
		if b >= 0 {
			if own, _ := workingSlots(sb); b >= len(own) || !own[b] {
				c.Removed = append(c.Removed, m.Name)
				continue
			}
		}
		if s := slotOf(sb); s >= 0 && s < n && weight[s] > 0 {
			c.Avail[s] = true
		}
	}
	for _, ok := range c.Avail {
		if ok {
			c.Active++
		}
	}
	return c
}

// enough is mdadm's enough(): whether the present slots can start an
// array of the level; clean is the freshest superblock's clean bit.
func enough(level superblock.Level, layout uint32, clean bool, avail []bool) bool {
	n := len(avail)
	have := countTrue(avail)
	if n == 0 {
		return false
	}
	switch level {
	case superblock.LevelLinear, superblock.LevelRAID0:
		return have == n
	case superblock.LevelRAID1, superblock.LevelMultipath:
		return have >= 1
	case superblock.LevelRAID4:
		if have == n || (have == n-1 && !avail[n-1]) {
			return true
		}
		return clean && have >= n-1
	case superblock.LevelRAID5:
		if clean {
			return have >= n-1
		}
		return have == n
	case superblock.LevelRAID6:
		if clean {
			return have >= n-2
		}
		return have == n
	case superblock.LevelRAID10:
		return survives("raid10", int64(layout), avail)
	}
	return false
}
