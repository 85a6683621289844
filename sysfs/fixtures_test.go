package sysfs

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
)

// TestFixtures reads every attribute of every array and member in every
// real capture (internal/fixture: each case has sysfs.txt, a sysfstree
// manifest, and detail-export.txt, mdadm --detail --export), and checks
// what it reads against mdadm's view of the same array. Captures come
// from amd64 (little-endian) kernels, so this also checks the 0.90 UUID
// rule in CanonicalUUID.
func TestFixtures(t *testing.T) {
	for _, fc := range fixture.All(t) {
		t.Run(filepath.Base(fc.Dir), func(t *testing.T) { checkFixture(qt.New(t), fc.Dir) })
	}
}

// TestFixtureCheckerOnSyntheticCase runs the fixture checker on a case
// written here, so that it is known to work before real captures exist.
func TestFixtureCheckerOnSyntheticCase(t *testing.T) {
	c := qt.New(t)
	dir := c.TempDir()
	c.Assert(os.WriteFile(filepath.Join(dir, "sysfs.txt"), []byte(sysfstree.Header+"\n"+memberTreeFor090), 0o644), qt.IsNil)
	c.Assert(os.WriteFile(filepath.Join(dir, "detail-export.txt"), []byte(`MD_LEVEL=raid1
MD_DEVICES=2
MD_METADATA=0.90
MD_UUID=37c76b91:011a05c5:d30c1fd4:c5c3dbbc
MD_DEVICE_dev_vdb_ROLE=0
MD_DEVICE_dev_vdb_DEV=/dev/vdb
MD_DEVICE_dev_vdc_ROLE=spare
MD_DEVICE_dev_vdc_DEV=/dev/vdc
MD_DEVICE_dev_vdd_ROLE=faulty
MD_DEVICE_dev_vdd_DEV=/dev/vdd
`), 0o644), qt.IsNil)
	checkFixture(c, dir)
}

const memberTreeFor090 = `l "block/md0" "../devices/virtual/block/md0"
f "devices/virtual/block/md0/dev" "9:0\n"
f "devices/virtual/block/md0/size" "65408\n"
f "devices/virtual/block/md0/md/level" "raid1\n"
f "devices/virtual/block/md0/md/raid_disks" "2\n"
f "devices/virtual/block/md0/md/metadata_version" "0.90\n"
f "devices/virtual/block/md0/md/uuid" "916bc737-c505-1a01-d41f-0cd3bcdbc3c5\n"
f "devices/virtual/block/md0/md/array_state" "clean\n"
f "devices/virtual/block/md0/md/sync_completed" "delayed\n"
f "devices/virtual/block/md0/md/sync_speed_max" "200000 (system)\n"
f "devices/virtual/block/md0/md/bitmap/location" "none\n"
w "devices/virtual/block/md0/md/new_dev" "permission denied"
f "devices/virtual/block/md0/md/dev-vdb/state" "in_sync\n"
f "devices/virtual/block/md0/md/dev-vdb/slot" "0\n"
f "devices/virtual/block/md0/md/dev-vdc/state" "spare\n"
f "devices/virtual/block/md0/md/dev-vdc/slot" "1\n"
f "devices/virtual/block/md0/md/dev-vdd/state" "faulty\n"
f "devices/virtual/block/md0/md/dev-vdd/slot" "none\n"
`

// exportInfo is the part of mdadm --detail --export that is checked.
type exportInfo struct {
	level   string
	devices int
	uuid    string
	roles   map[string]string // member kernel name -> ROLE
}

func readExport(c *qt.C, name string) (exportInfo, bool) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return exportInfo{}, false
	}
	c.Assert(err, qt.IsNil)
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			kv[k] = strings.Trim(v, `'"`)
		}
	}
	c.Assert(sc.Err(), qt.IsNil)
	info := exportInfo{level: kv["MD_LEVEL"], uuid: kv["MD_UUID"], roles: map[string]string{}, devices: -1}
	if n, err := strconv.Atoi(kv["MD_DEVICES"]); err == nil {
		info.devices = n
	}
	for k, v := range kv {
		key, ok := strings.CutSuffix(k, "_ROLE")
		if !ok || !strings.HasPrefix(key, "MD_DEVICE_") {
			continue
		}
		dev := kv[key+"_DEV"]
		if dev == "" {
			continue
		}
		info.roles[filepath.Base(dev)] = v
	}
	return info, true
}

// mdadmUUID formats u the way mdadm prints it.
func mdadmUUID(u uuid.UUID) string {
	h := strings.ReplaceAll(u.String(), "-", "")
	return h[0:8] + ":" + h[8:16] + ":" + h[16:24] + ":" + h[24:32]
}

// allowed reports whether err is nil or "not present".
func allowed(err error) bool { return err == nil || errors.Is(err, fs.ErrNotExist) }

func checkFixture(c *qt.C, dir string) {
	entries, err := sysfstree.ParseFile(filepath.Join(dir, "sysfs.txt"))
	c.Assert(err, qt.IsNil)
	root := c.TempDir()
	c.Assert(sysfstree.Materialize(root, entries), qt.IsNil)
	// Attributes that could not be read at capture time are empty
	// write-only files now; they are not checked.
	unreadable := map[string]bool{}
	for _, e := range entries {
		if e.Kind == sysfstree.Unreadable {
			unreadable[filepath.Join(root, filepath.FromSlash(e.Path))] = true
		}
	}
	fsys, err := NewFS(root)
	c.Assert(err, qt.IsNil)
	fsys = fsys.WithByteOrder(binary.LittleEndian) // captures come from amd64 guests
	names, err := fsys.Arrays()
	c.Assert(err, qt.IsNil)
	c.Assert(names, qt.Not(qt.HasLen), 0)
	info, haveExport := readExport(c, filepath.Join(dir, "detail-export.txt"))

	check := func(what string, p string, err error) {
		c.Helper()
		if unreadable[p] {
			return
		}
		c.Check(allowed(err), qt.IsTrue, qt.Commentf("%s: %s: %v", what, p, err))
	}
	matched := false
	for _, name := range names {
		a, err := fsys.Array(name)
		c.Assert(err, qt.IsNil)
		arrayGetters := map[string]struct {
			attr []string
			get  getter
		}{
			"level": {[]string{"level"}, g(Array.Level)}, "raid_disks": {[]string{"raid_disks"}, g(Array.RaidDisks)},
			"layout": {[]string{"layout"}, g(Array.Layout)}, "chunk_size": {[]string{"chunk_size"}, g(Array.ChunkSize)},
			"component_size": {[]string{"component_size"}, g(Array.ComponentSize)},
			"array_size":     {[]string{"array_size"}, g(Array.ArraySize)},
			"array_state":    {[]string{"array_state"}, g(Array.State)},
			"metadata":       {[]string{"metadata_version"}, g(Array.MetadataVersion)},
			"uuid":           {[]string{"uuid"}, g(Array.UUID)},
			"degraded":       {[]string{"degraded"}, g(Array.Degraded)},
			"sync_action":    {[]string{"sync_action"}, g(Array.SyncAction)},
			"last_sync":      {[]string{"last_sync_action"}, g(Array.LastSyncAction)},
			"sync_completed": {[]string{"sync_completed"}, g(Array.SyncCompleted)},
			"sync_speed":     {[]string{"sync_speed"}, g(Array.SyncSpeed)},
			"sync_speed_min": {[]string{"sync_speed_min"}, g(Array.SyncSpeedMin)},
			"sync_speed_max": {[]string{"sync_speed_max"}, g(Array.SyncSpeedMax)},
			"sync_min":       {[]string{"sync_min"}, g(Array.SyncMin)},
			"sync_max":       {[]string{"sync_max"}, g(Array.SyncMax)},
			"mismatch_cnt":   {[]string{"mismatch_cnt"}, g(Array.MismatchCount)},
			"reshape_pos":    {[]string{"reshape_position"}, g(Array.ReshapePosition)},
			"reshape_dir":    {[]string{"reshape_direction"}, g(Array.ReshapeDirection)},
			"resync_start":   {[]string{"resync_start"}, g(Array.ResyncStart)},
			"consistency":    {[]string{"consistency_policy"}, g(Array.ConsistencyPolicy)},
			"bm_location":    {[]string{"bitmap", "location"}, g(Array.BitmapLocation)},
			"bm_chunksize":   {[]string{"bitmap", "chunksize"}, g(Array.BitmapChunkSize)},
			"bm_time_base":   {[]string{"bitmap", "time_base"}, g(Array.BitmapTimeBase)},
			"bm_backlog":     {[]string{"bitmap", "backlog"}, g(Array.BitmapBacklog)},
			"bm_metadata":    {[]string{"bitmap", "metadata"}, g(Array.BitmapMetadata)},
			"bm_can_clear":   {[]string{"bitmap", "can_clear"}, g(Array.BitmapCanClear)},
			"bm_max_backlog": {[]string{"bitmap", "max_backlog_used"}, g(Array.BitmapMaxBacklogUsed)},
			"bm_space":       {[]string{"bitmap", "space"}, g(Array.BitmapSpace)},
		}
		for what, ag := range arrayGetters {
			_, err := ag.get(a)
			check(name+" "+what, a.Path(ag.attr...), err)
		}
		_, err = a.Size()
		check(name+" size", a.blockPath("size"), err)
		_, err = a.Dev()
		check(name+" dev", a.blockPath("dev"), err)
		_, err = a.SlotLinks()
		c.Check(err, qt.IsNil)

		members, err := a.Members()
		c.Assert(err, qt.IsNil)
		byName := map[string]Member{}
		for _, m := range members {
			byName[m.Name()] = m
			for attr, get := range map[string]func(Member) (any, error){
				"state":                     func(m Member) (any, error) { return m.State() },
				"slot":                      func(m Member) (any, error) { return m.Slot() },
				"errors":                    func(m Member) (any, error) { return m.Errors() },
				"offset":                    func(m Member) (any, error) { return m.Offset() },
				"new_offset":                func(m Member) (any, error) { return m.NewOffset() },
				"size":                      func(m Member) (any, error) { return m.Size() },
				"recovery_start":            func(m Member) (any, error) { return m.RecoveryStart() },
				"bad_blocks":                func(m Member) (any, error) { return m.BadBlocks() },
				"unacknowledged_bad_blocks": func(m Member) (any, error) { return m.UnacknowledgedBadBlocks() },
				"ppl_sector":                func(m Member) (any, error) { return m.PPLSector() },
				"ppl_size":                  func(m Member) (any, error) { return m.PPLSize() },
			} {
				_, err := get(m)
				check(name+" "+m.Dir()+" "+attr, m.Path(attr), err)
			}
			if _, err := os.Lstat(m.Path("block")); err == nil {
				bl, err := m.Block()
				c.Check(err, qt.IsNil)
				c.Check(bl.Name, qt.Equals, m.Name())
			}
		}

		// Cross-check against mdadm for the array that has the members
		// mdadm listed.
		if !haveExport || len(info.roles) == 0 {
			continue
		}
		mine := 0
		for dev := range info.roles {
			if _, ok := byName[dev]; ok {
				mine++
			}
		}
		if mine == 0 {
			continue
		}
		matched = true
		lvl, err := a.Level()
		c.Assert(err, qt.IsNil)
		c.Check(string(lvl), qt.Equals, info.level, qt.Commentf("%s level", name))
		state, err := a.State()
		c.Assert(err, qt.IsNil)
		if state == StateInactive {
			// Seen on the real kernel (raid5-inactive): an array assembled
			// but not started shows an empty raid_disks and an all-zero
			// uuid until it runs; mdadm takes both from the superblocks.
			rd, err := a.RaidDisks()
			c.Assert(err, qt.IsNil)
			c.Check(rd.Valid, qt.IsFalse, qt.Commentf("%s raid_disks of an inactive array", name))
			u, err := a.UUID()
			c.Assert(err, qt.IsNil)
			c.Check(u, qt.Equals, uuid.UUID{}, qt.Commentf("%s uuid of an inactive array", name))
		} else if info.devices >= 0 {
			rd, err := a.RaidDisks()
			c.Assert(err, qt.IsNil)
			c.Check(rd.Valid, qt.IsTrue)
			c.Check(rd.Value.Current, qt.Equals, int64(info.devices), qt.Commentf("%s raid_disks", name))
		}
		if info.uuid != "" && state != StateInactive {
			u, err := a.UUID()
			c.Assert(err, qt.IsNil)
			mv, _ := a.MetadataVersion()
			c.Check(mdadmUUID(u), qt.Equals, info.uuid, qt.Commentf("%s uuid (metadata %s)", name, mv.Raw))
		}
		for dev, role := range info.roles {
			m, ok := byName[dev]
			if !c.Check(ok, qt.IsTrue, qt.Commentf("mdadm lists %s, sysfs does not", dev)) {
				continue
			}
			slot, err := m.Slot()
			c.Assert(err, qt.IsNil)
			st, err := m.State()
			c.Assert(err, qt.IsNil)
			switch role {
			case "spare":
				// mdadm --detail --export prints "spare" for a faulty
				// member too (raid1-failed), as --examine does.
				c.Check(st.Has(FlagSpare) || st.Has(FlagFaulty), qt.IsTrue, qt.Commentf("%s role spare, state %s", dev, st))
			case "faulty":
				c.Check(st.Has(FlagFaulty), qt.IsTrue, qt.Commentf("%s role faulty, state %s", dev, st))
			case "journal":
				c.Check(slot, qt.Equals, SlotJournal, qt.Commentf("%s role journal", dev))
			default:
				n, err := strconv.Atoi(role)
				if !c.Check(err, qt.IsNil, qt.Commentf("%s role %q", dev, role)) {
					continue
				}
				c.Check(slot, qt.Equals, Slot(n), qt.Commentf("%s role %d, state %s", dev, n, st))
			}
		}
	}
	if haveExport && len(info.roles) > 0 {
		c.Check(matched, qt.IsTrue, qt.Commentf("no array has the members mdadm lists"))
	}
}
