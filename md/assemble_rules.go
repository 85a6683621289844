package md

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
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

// neverRun reports whether sb was never updated by a running array:
// md writes the superblocks, and counts the events up, at the array's
// first write or sync (md_update_sb; an array started and never written
// keeps what its create wrote), and never counts them back below 1: 0 is
// what a 1.x create writes, 1 what a 0.90 create writes (mdadm's
// init_super0, and mdctl create). Such an array holds nothing written
// through it. docs/create.md, "Killed while creating".
func neverRun(sb *superblock.Superblock) bool {
	if sb.Version == superblock.Version090 {
		return sb.Events <= 1
	}
	return sb.Events == 0
}

// unfinishedCreate says why the members at hand of one array (sbs, nil
// entries skipped) must not be started, however few are missing: the
// freshest superblock has never run, and it names working slots that
// no member at hand holds. A create writes every member's superblock
// before it starts the array, so such a set is what a create killed
// between two members leaves: started, it would make a degraded array
// of a create that never finished. A create with "missing" names only
// the members it wrote, so it is not held back. "" when the members
// may start.
func unfinishedCreate(sbs []*superblock.Superblock) string {
	var best *superblock.Superblock
	for _, sb := range sbs {
		if sb != nil && (best == nil || sb.Events > best.Events) {
			best = sb
		}
	}
	if best == nil || !neverRun(best) {
		return ""
	}
	want, n := workingSlots(best)
	have := make([]bool, len(want))
	found := 0
	for _, sb := range sbs {
		if sb == nil {
			continue
		}
		if s := slotOf(sb); s >= 0 && s < len(want) && want[s] && !have[s] {
			have[s] = true
			found++
		}
	}
	if found >= n {
		return ""
	}
	var absent []string
	for s, w := range want {
		if w && !have[s] {
			absent = append(absent, strconv.Itoa(s))
		}
	}
	return fmt.Sprintf("no running array has updated its superblocks (events %d), and they name %d members, %d of them here (slot %s missing): a create that did not finish leaves this, so it is not started with members missing (mdctl run --unfinished starts it so)",
		best.Events, n, found, strings.Join(absent, ", "))
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
	// Removed are members that think the best one failed: mdadm
	// detaches them before starting.
	Removed []string
}

// countActive is mdadm's count_active (Incremental.c, d1447022) over
// the members attached so far, in the kernel's order of the array's
// dev-* entries: members whose own superblock names a slot count when
// their events are the highest seen, or one less (the kernel's allowance
// of one); a member further behind does not. It keeps mdadm's unsigned
// arithmetic: when the first member counted has events 0 (a superblock
// never updated since creation), "one less" wraps around and every
// later member is passed over, so such an array waits (as it does under
// mdadm) until Run starts it, when the kernel picks the freshest.
func countActive(ms []attached) counted {
	var c counted
	if len(ms) == 0 {
		return c
	}
	// The slot count is the first member's, in use or not.
	n := int(ms[0].SB.RaidDisks)
	if n > int(superblock.RoleMax) {
		n = int(superblock.RoleMax)
	}
	avail := make([]int, n)
	best := make([]int, n)
	var max uint64
	cnt := 0
	for i, m := range ms {
		sb := m.SB
		if !inSync(sb) {
			continue
		}
		slot := slotOf(sb)
		if slot < 0 || slot >= n {
			continue
		}
		ev := sb.Events
		switch {
		case cnt == 0:
			cnt++
			max = ev
			avail[slot], best[slot] = 2, i
			c.Best = sb
		case ev == max:
			avail[slot], best[slot] = 2, i
		case ev == max-1:
			if avail[slot] == 0 {
				avail[slot], best[slot] = 1, i
			}
		case ev < max-1:
		case ev == max+1:
			max = ev
			for s := range avail {
				if avail[s] > 0 {
					avail[s]--
				}
			}
			avail[slot], best[slot] = 2, i
			c.Best = sb
		default:
			max = ev
			clear(avail)
			avail[slot], best[slot] = 2, i
			c.Best = sb
		}
	}
	if c.Best == nil {
		return c
	}
	_, c.Expected = workingSlots(c.Best)
	// Reject any member that thinks the best device (the first slot with
	// full weight) failed or is missing.
	b := 0
	for b < n && avail[b] != 2 {
		b++
	}
	c.Avail = make([]bool, n)
	for s := 0; s < n; s++ {
		if s != b && avail[s] > 0 && b < n {
			if own, _ := workingSlots(ms[best[s]].SB); b >= len(own) || !own[b] {
				c.Removed = append(c.Removed, ms[best[s]].Name)
				avail[s] = 0
			}
		}
		if avail[s] > 0 {
			c.Avail[s] = true
			c.Active++
		}
	}
	// mdadm also marks spares with events above the best's, but it
	// compares events it never read from sysfs (always 0): the rule
	// never fires, and is left out here.
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

// names reports whether judge's superblock names member's superblock in
// slot: 1.x dev_roles[member's dev_number] is slot; 0.90 the descriptor
// of member's number is active and in sync in that raid disk.
func names(judge, member *superblock.Superblock, slot int) bool {
	if judge.Version == superblock.Version090 {
		n := member.ThisDisk.Number
		if n >= uint32(len(judge.Disks)) {
			return false
		}
		d := judge.Disks[n]
		return d.State&(superblock.DiskActive|superblock.DiskSync) == superblock.DiskActive|superblock.DiskSync &&
			d.State&superblock.DiskFaulty == 0 && int(d.RaidDisk) == slot
	}
	n := member.DevNumber
	return n < uint32(len(judge.DevRoles)) && judge.DevRoles[n].IsSlot() && int(judge.DevRoles[n]) == slot
}

// slotVerdict is what sortMembers decides for one device offered for an
// array.
type slotVerdict struct {
	// leftOut, when not "", says why the device is not added: another
	// device is current for its slot.
	leftOut string
	// conflict, when not "", says why no device of the array is added.
	conflict string
}

// sortMembers decides, for the devices offered for one array that is not
// running (sbs, in the order of the devices, with their names), which of
// the devices that claim one slot counts (docs/assembly.md §10). Devices
// with the same device UUID are a conflict: one is a copy of the other.
// Of the devices that claim one slot, the current one is the one the
// other slots' members name there (by its descriptor number) and whose
// events are not behind theirs by more than the kernel's allowance of
// one; when exactly one is, the others are left out. When none or
// several are (no other member to judge, or an impostor as fresh as the
// real member), the slot is a conflict and the whole array waits: one
// device cannot take the array over by claiming a slot with more
// events. With lax (mdadm's --assemble rule), a conflict is decided by
// the most events, then the first device, and never stops the array.
// The result has one slotVerdict per device.
func sortMembers(knames []string, sbs []*superblock.Superblock, lax bool) []slotVerdict {
	v := make([]slotVerdict, len(sbs))
	conflict := func(why string) []slotVerdict {
		for i := range v {
			v[i] = slotVerdict{conflict: why}
		}
		return v
	}
	// pick keeps the most events, then the first, of the devices idx;
	// why is said of the others.
	pick := func(idx []int, why string) {
		best := idx[0]
		for _, i := range idx[1:] {
			if sbs[i].Events > sbs[best].Events {
				best = i
			}
		}
		for _, i := range idx {
			if i != best && v[i].leftOut == "" {
				v[i].leftOut = fmt.Sprintf("%s; %s (events %d) is used", why, knames[best], sbs[best].Events)
			}
		}
	}
	// Copies: the same device UUID on two devices (1.x; 0.90 has none).
	byDev := map[[16]byte][]int{}
	var devOrder [][16]byte
	for i, sb := range sbs {
		if sb.Version == superblock.Version090 {
			continue
		}
		k := [16]byte(sb.DeviceUUID)
		if _, ok := byDev[k]; !ok {
			devOrder = append(devOrder, k)
		}
		byDev[k] = append(byDev[k], i)
	}
	for _, k := range devOrder {
		idx := byDev[k]
		if len(idx) < 2 {
			continue
		}
		why := fmt.Sprintf("%s and %s carry the same device UUID: one is a copy of the other", knames[idx[0]], knames[idx[1]])
		if !lax {
			return conflict(why)
		}
		pick(idx, why)
	}
	// Slots claimed twice.
	claims := map[int][]int{}
	var slots []int
	for i, sb := range sbs {
		s := slotOf(sb)
		if s < 0 || v[i].leftOut != "" {
			continue
		}
		if _, ok := claims[s]; !ok {
			slots = append(slots, s)
		}
		claims[s] = append(claims[s], i)
	}
	sort.Ints(slots)
	for _, s := range slots {
		idx := claims[s]
		if len(idx) < 2 {
			continue
		}
		var judges []int
		var ref uint64
		for j, sb := range sbs {
			if js := slotOf(sb); js >= 0 && js != s && v[j].leftOut == "" {
				judges = append(judges, j)
				ref = max(ref, sb.Events)
			}
		}
		var current []int
		for _, i := range idx {
			named := false
			for _, j := range judges {
				if names(sbs[j], sbs[i], s) {
					named = true
					break
				}
			}
			if named && sbs[i].Events+1 >= ref {
				current = append(current, i)
			}
		}
		var list []string
		for _, i := range idx {
			list = append(list, fmt.Sprintf("%s (events %d)", knames[i], sbs[i].Events))
		}
		claimed := fmt.Sprintf("slot %d is claimed by %s", s, strings.Join(list, " and "))
		if len(current) == 1 {
			for _, i := range idx {
				if i != current[0] {
					v[i].leftOut = fmt.Sprintf("%s; the other members name %s there (events %d)", claimed, knames[current[0]], sbs[current[0]].Events)
				}
			}
			continue
		}
		why := claimed + "; no other member's superblock shows which is current"
		if len(current) > 1 {
			why = claimed + "; the other members' superblocks do not tell them apart"
		}
		if !lax {
			return conflict(why)
		}
		pick(idx, why)
	}
	return v
}

// startsDegraded reports whether the devices offered for one array that
// is not running (sbs, with sortMembers' verdicts) would start it with a
// slot empty: the kernel then rebuilds onto a spare attached with them
// at once. Every slot below raid_disks counts, also one the freshest
// superblock already records as failed or removed (a mirror degraded
// since before the shutdown is still degraded).
func startsDegraded(sbs []*superblock.Superblock, vs []slotVerdict) bool {
	var best *superblock.Superblock
	for i, sb := range sbs {
		if vs[i].leftOut == "" && vs[i].conflict == "" && slotOf(sb) >= 0 && (best == nil || sb.Events > best.Events) {
			best = sb
		}
	}
	if best == nil {
		return true // no member names a slot: nothing to serve
	}
	n := min(int(best.RaidDisks), int(superblock.RoleMax))
	present := make([]bool, n)
	for i, sb := range sbs {
		if s := slotOf(sb); vs[i].leftOut == "" && vs[i].conflict == "" && s >= 0 && s < len(present) && sb.Events+1 >= best.Events {
			present[s] = true
		}
	}
	return slices.Contains(present, false)
}
