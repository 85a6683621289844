package sysfs

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/sysfstree"
)

// newTree materializes a manifest (without its header line) in a
// temporary directory and returns an FS on it.
func newTree(c *qt.C, manifest string) FS {
	c.Helper()
	fsys, err := NewFS(sysfstree.Tree(c, manifest))
	c.Assert(err, qt.IsNil)
	return fsys
}

// arrayTree returns a manifest for array name with the given md/
// attributes (path below md/ -> content; content "<dir>" makes a directory).
func arrayTree(name string, attrs map[string]string) string {
	var b strings.Builder
	dir := "devices/virtual/block/" + name
	b.WriteString("l \"block/" + name + "\" \"../" + dir + "\"\n")
	b.WriteString("f \"" + dir + "/dev\" \"9:127\\n\"\n")
	b.WriteString("f \"" + dir + "/size\" \"130816\\n\"\n")
	b.WriteString("d \"" + dir + "/md\"\n")
	for k, v := range attrs {
		if v == "<dir>" {
			b.WriteString("d \"" + dir + "/md/" + k + "\"\n")
			continue
		}
		b.WriteString("f \"" + dir + "/md/" + k + "\" " + quote(v) + "\n")
	}
	return b.String()
}

func quote(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n", "\t", "\\t")
	return "\"" + r.Replace(s) + "\""
}

func TestNewFS(t *testing.T) {
	c := qt.New(t)
	_, err := NewFS(filepath.Join(c.TempDir(), "nope"))
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	f := filepath.Join(c.TempDir(), "file")
	c.Assert(os.WriteFile(f, nil, 0o644), qt.IsNil)
	_, err = NewFS(f)
	c.Assert(err, qt.IsNotNil)
	fsys, err := NewFS(c.TempDir())
	c.Assert(err, qt.IsNil)
	c.Assert(fsys.Path("block", "md0", "md", "level"), qt.Equals, filepath.Join(fsys.Root(), "block/md0/md/level"))
}

func TestArrays(t *testing.T) {
	c := qt.New(t)
	fsys := newTree(c, arrayTree("md127", map[string]string{"array_state": "inactive\n"})+
		arrayTree("md0", map[string]string{"array_state": "clean\n"})+
		`l "block/loop0" "../devices/virtual/block/loop0"
d "devices/virtual/block/loop0"
l "block/md9" "../devices/virtual/block/md9"
d "devices/virtual/block/md9"
`)
	names, err := fsys.Arrays()
	c.Assert(err, qt.IsNil)
	c.Assert(names, qt.DeepEquals, []string{"md0", "md127"})

	_, err = fsys.Array("md9") // no md/ directory
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = fsys.Array("md5")
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = fsys.Array("../md0")
	c.Assert(err, qt.ErrorIs, fs.ErrInvalid)
}

// get reads one attribute through a getter and returns its value as any.
type getter func(a Array) (any, error)

func g[T any](f func(Array) (T, error)) getter {
	return func(a Array) (any, error) { return f(a) }
}

func TestArrayAttributes(t *testing.T) {
	tests := []struct {
		name  string
		attr  string // below md/
		data  string
		get   getter
		want  any
		isErr error // errors.Is target when an error is expected
	}{
		{"level raid1", "level", "raid1\n", g(Array.Level), LevelRAID1, nil},
		{"level empty", "level", "\n", g(Array.Level), LevelNone, nil},
		{"level bare number (assembled, not running)", "level", "1\n", g(Array.Level), Level("1"), nil},
		{"level container", "level", "container\n", g(Array.Level), LevelContainer, nil},
		{"raid_disks", "raid_disks", "2\n", g(Array.RaidDisks), Some(Reshaped{2, 2}), nil},
		{"raid_disks reshape", "raid_disks", "4 (3)\n", g(Array.RaidDisks), Some(Reshaped{4, 3}), nil},
		{"raid_disks container empty", "raid_disks", "", g(Array.RaidDisks), Optional[Reshaped]{}, nil},
		{"raid_disks junk", "raid_disks", "4 [3]\n", g(Array.RaidDisks), nil, ErrFormat},
		{"layout raid0 -1", "layout", "-1\n", g(Array.Layout), Reshaped{-1, -1}, nil},
		{"layout reshape", "layout", "2 (5)\n", g(Array.Layout), Reshaped{2, 5}, nil},
		{"chunk_size reshape", "chunk_size", "131072 (65536)\n", g(Array.ChunkSize), Reshaped{131072, 65536}, nil},
		{"component_size KiB", "component_size", "65408\n", g(Array.ComponentSize), uint64(65408), nil},
		{"array_size default", "array_size", "default\n", g(Array.ArraySize), Optional[uint64]{}, nil},
		{"array_size set", "array_size", "1024\n", g(Array.ArraySize), Some(uint64(1024)), nil},
		{"array_state clean", "array_state", "clean\n", g(Array.State), StateClean, nil},
		{"array_state read-auto", "array_state", "read-auto\n", g(Array.State), StateReadAuto, nil},
		{"array_state clear", "array_state", "clear\n", g(Array.State), StateClear, nil},
		{"array_state broken", "array_state", "broken\n", g(Array.State), StateBroken, nil},
		{"array_state future", "array_state", "hibernating\n", g(Array.State), ArrayState("hibernating"), nil},
		{"metadata 1.2", "metadata_version", "1.2\n", g(Array.MetadataVersion),
			MetadataVersion{Raw: "1.2", Kind: MetadataNative, Major: 1, Minor: 2}, nil},
		{"metadata 0.90", "metadata_version", "0.90\n", g(Array.MetadataVersion),
			MetadataVersion{Raw: "0.90", Kind: MetadataNative, Major: 0, Minor: 90}, nil},
		{"metadata none", "metadata_version", "none\n", g(Array.MetadataVersion),
			MetadataVersion{Raw: "none", Kind: MetadataNone}, nil},
		{"metadata imsm", "metadata_version", "external:imsm\n", g(Array.MetadataVersion),
			MetadataVersion{Raw: "external:imsm", Kind: MetadataExternal, External: "imsm"}, nil},
		{"metadata future", "metadata_version", "2.0-beta\n", g(Array.MetadataVersion),
			MetadataVersion{Raw: "2.0-beta"}, nil},
		{"degraded", "degraded", "1\n", g(Array.Degraded), uint64(1), nil},
		{"sync_action recover", "sync_action", "recover\n", g(Array.SyncAction), ActionRecover, nil},
		{"sync_action future", "sync_action", "scrub\n", g(Array.SyncAction), SyncAction("scrub"), nil},
		{"last_sync_action none (old kernels)", "last_sync_action", "none\n", g(Array.LastSyncAction), SyncAction("none"), nil},
		{"sync_completed none", "sync_completed", "none\n", g(Array.SyncCompleted), Progress{State: ProgressNone}, nil},
		{"sync_completed delayed", "sync_completed", "delayed\n", g(Array.SyncCompleted), Progress{State: ProgressDelayed}, nil},
		{"sync_completed running", "sync_completed", "1536 / 130816\n", g(Array.SyncCompleted),
			Progress{Done: 1536, Total: 130816, State: ProgressRunning}, nil},
		{"sync_completed junk", "sync_completed", "50%\n", g(Array.SyncCompleted), nil, ErrFormat},
		{"sync_speed none", "sync_speed", "none\n", g(Array.SyncSpeed), Optional[uint64]{}, nil},
		{"sync_speed", "sync_speed", "10240\n", g(Array.SyncSpeed), Some(uint64(10240)), nil},
		{"sync_speed_min system", "sync_speed_min", "1000 (system)\n", g(Array.SyncSpeedMin), Speed{1000, "system"}, nil},
		{"sync_speed_max local", "sync_speed_max", "1 (local)\n", g(Array.SyncSpeedMax), Speed{1, "local"}, nil},
		{"sync_speed_max bare", "sync_speed_max", "200000\n", g(Array.SyncSpeedMax), Speed{200000, ""}, nil},
		{"sync_min", "sync_min", "0\n", g(Array.SyncMin), uint64(0), nil},
		{"sync_max max", "sync_max", "max\n", g(Array.SyncMax), Optional[uint64]{}, nil},
		{"sync_max set", "sync_max", "2048\n", g(Array.SyncMax), Some(uint64(2048)), nil},
		{"mismatch_cnt", "mismatch_cnt", "128\n", g(Array.MismatchCount), uint64(128), nil},
		{"reshape_position none", "reshape_position", "none\n", g(Array.ReshapePosition), Optional[uint64]{}, nil},
		{"reshape_position", "reshape_position", "6144\n", g(Array.ReshapePosition), Some(uint64(6144)), nil},
		{"reshape_direction", "reshape_direction", "forwards\n", g(Array.ReshapeDirection), "forwards", nil},
		{"resync_start none", "resync_start", "none\n", g(Array.ResyncStart), Optional[uint64]{}, nil},
		{"resync_start", "resync_start", "0\n", g(Array.ResyncStart), Some(uint64(0)), nil},
		{"consistency_policy", "consistency_policy", "bitmap\n", g(Array.ConsistencyPolicy), PolicyBitmap, nil},
		{"consistency_policy future", "consistency_policy", "zns\n", g(Array.ConsistencyPolicy), ConsistencyPolicy("zns"), nil},
		{"bitmap location none", "bitmap/location", "none\n", g(Array.BitmapLocation), BitmapLocation{Kind: "none"}, nil},
		{"bitmap location +8", "bitmap/location", "+8\n", g(Array.BitmapLocation), BitmapLocation{Kind: "offset", Offset: 8}, nil},
		{"bitmap location -16", "bitmap/location", "-16\n", g(Array.BitmapLocation), BitmapLocation{Kind: "offset", Offset: -16}, nil},
		{"bitmap location file", "bitmap/location", "file\n", g(Array.BitmapLocation), BitmapLocation{Kind: "file"}, nil},
		{"bitmap chunksize", "bitmap/chunksize", "65536\n", g(Array.BitmapChunkSize), uint64(65536), nil},
		{"bitmap time_base", "bitmap/time_base", "5\n", g(Array.BitmapTimeBase), uint64(5), nil},
		{"bitmap backlog", "bitmap/backlog", "0\n", g(Array.BitmapBacklog), uint64(0), nil},
		{"bitmap metadata", "bitmap/metadata", "internal\n", g(Array.BitmapMetadata), "internal", nil},
		{"bitmap can_clear none", "bitmap/can_clear", "\n", g(Array.BitmapCanClear), Optional[bool]{}, nil},
		{"bitmap can_clear true", "bitmap/can_clear", "true\n", g(Array.BitmapCanClear), Some(true), nil},
		{"bitmap can_clear false", "bitmap/can_clear", "false\n", g(Array.BitmapCanClear), Some(false), nil},
		{"bitmap max_backlog_used", "bitmap/max_backlog_used", "0\n", g(Array.BitmapMaxBacklogUsed), uint64(0), nil},
		{"bitmap space", "bitmap/space", "8\n", g(Array.BitmapSpace), uint64(8), nil},
		{"uuid raw", "uuid", "4c4d3a4e-8f2e-9e3c-2b3a-0c1d2e3f4a5b\n", g(Array.RawUUID),
			uuid.MustParse("4c4d3a4e-8f2e-9e3c-2b3a-0c1d2e3f4a5b"), nil},
	}
	for _, tt := range tests {
		c := qt.New(t)
		c.Run(tt.name, func(c *qt.C) {
			a, err := newTree(c, arrayTree("md0", map[string]string{tt.attr: tt.data})).Array("md0")
			c.Assert(err, qt.IsNil)
			got, err := tt.get(a)
			if tt.isErr != nil {
				c.Assert(err, qt.ErrorIs, tt.isErr)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Assert(got, qt.DeepEquals, tt.want)
		})
	}
}

func TestArrayBlockAttributes(t *testing.T) {
	c := qt.New(t)
	a, err := newTree(c, arrayTree("md0", nil)).Array("md0")
	c.Assert(err, qt.IsNil)
	size, err := a.Size()
	c.Assert(err, qt.IsNil)
	c.Assert(size, qt.Equals, uint64(130816))
	dev, err := a.Dev()
	c.Assert(err, qt.IsNil)
	c.Assert(dev, qt.Equals, DevNum{9, 127})
	c.Assert(dev.String(), qt.Equals, "9:127")
}

// TestRedundancyAttributesMissing: raid0, linear, inactive arrays and
// containers have no redundancy attributes; every getter says "not
// present" with fs.ErrNotExist and nothing panics.
func TestRedundancyAttributesMissing(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]string
	}{
		{"raid0", map[string]string{"level": "raid0\n", "array_state": "clean\n", "layout": "-1\n", "raid_disks": "2\n", "chunk_size": "524288\n"}},
		{"linear", map[string]string{"level": "linear\n", "array_state": "clean\n", "raid_disks": "2\n"}},
		{"inactive", map[string]string{"level": "\n", "array_state": "inactive\n", "raid_disks": "0\n"}},
		{"container", map[string]string{"level": "container\n", "array_state": "inactive\n", "raid_disks": "", "metadata_version": "external:imsm\n"}},
	}
	missing := []getter{
		g(Array.Degraded), g(Array.SyncAction), g(Array.LastSyncAction), g(Array.SyncCompleted),
		g(Array.SyncSpeed), g(Array.SyncSpeedMin), g(Array.SyncSpeedMax), g(Array.SyncMin),
		g(Array.SyncMax), g(Array.MismatchCount),
	}
	for _, tt := range tests {
		c := qt.New(t)
		c.Run(tt.name, func(c *qt.C) {
			a, err := newTree(c, arrayTree("md0", tt.attrs)).Array("md0")
			c.Assert(err, qt.IsNil)
			for i, get := range missing {
				_, err := get(a)
				c.Assert(err, qt.ErrorIs, fs.ErrNotExist, qt.Commentf("getter %d", i))
			}
			_, err = a.State()
			c.Assert(err, qt.IsNil)
			_, err = a.Level()
			c.Assert(err, qt.IsNil)
			_, err = a.RaidDisks()
			c.Assert(err, qt.IsNil)
		})
	}
}

func TestLevel(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		l         Level
		n         int
		ok        bool
		known     bool
		redundant bool
	}{
		{LevelRAID1, 1, true, true, true},
		{LevelRAID0, 0, true, true, false},
		{LevelLinear, -1, true, true, false},
		{LevelRAID10, 10, true, true, true},
		{Level("5"), 5, true, false, true},
		{LevelContainer, 0, false, true, false},
		{LevelNone, 0, false, true, false},
		{Level("raid7"), 7, true, false, false},
		{Level("zraid"), 0, false, false, false},
	} {
		n, ok := tt.l.Number()
		c.Check(n, qt.Equals, tt.n, qt.Commentf("%q", tt.l))
		c.Check(ok, qt.Equals, tt.ok, qt.Commentf("%q", tt.l))
		c.Check(tt.l.Known(), qt.Equals, tt.known, qt.Commentf("%q", tt.l))
		c.Check(tt.l.Redundant(), qt.Equals, tt.redundant, qt.Commentf("%q", tt.l))
	}
}

func TestKnown(t *testing.T) {
	c := qt.New(t)
	for _, s := range []ArrayState{StateClear, StateInactive, StateSuspended, StateReadonly, StateReadAuto,
		StateClean, StateActive, StateWritePending, StateActiveIdle, StateBroken} {
		c.Check(s.Known(), qt.IsTrue, qt.Commentf("%s", s))
	}
	c.Check(ArrayState("hibernating").Known(), qt.IsFalse)
	for _, a := range []SyncAction{ActionResync, ActionRecover, ActionCheck, ActionRepair, ActionReshape, ActionFrozen, ActionIdle} {
		c.Check(a.Known(), qt.IsTrue, qt.Commentf("%s", a))
	}
	c.Check(SyncAction("none").Known(), qt.IsFalse)
}

func TestMetadataContainer(t *testing.T) {
	c := qt.New(t)
	for _, tt := range []struct {
		in        string
		container string
		sub       string
		ok        bool
	}{
		{"external:/md127/0", "md127", "0", true},
		{"external:-md127/1", "md127", "1", true}, // mdadm blocks a subarray by writing '-'
		{"external:imsm", "", "", false},
		{"external:ddf", "", "", false},
		{"1.2", "", "", false},
		{"none", "", "", false},
		{"external:/", "", "", false},
	} {
		cn, sub, ok := ParseMetadataVersion(tt.in).Container()
		c.Check([]any{cn, sub, ok}, qt.DeepEquals, []any{tt.container, tt.sub, tt.ok}, qt.Commentf("%s", tt.in))
	}
	c.Assert(ParseMetadataVersion("0.90").Is090(), qt.IsTrue)
	c.Assert(ParseMetadataVersion("1.2").Is090(), qt.IsFalse)
}

func TestUUID(t *testing.T) {
	// libblkid's 0.90 test image: mdadm and blkid print
	// 37c76b91:011a05c5:d30c1fd4:c5c3dbbc. A little-endian kernel shows
	// each word byte-reversed in sysfs.
	canon := uuid.MustParse("37c76b91-011a-05c5-d30c-1fd4c5c3dbbc")
	leSysfs := "916bc737-c505-1a01-d41f-0cd3bcdbc3c5"
	tests := []struct {
		name  string
		raw   string
		meta  string
		order binary.ByteOrder
		want  uuid.UUID
	}{
		{"0.90 little-endian swaps words", leSysfs, "0.90", binary.LittleEndian, canon},
		{"0.90 big-endian as is", canon.String(), "0.90", binary.BigEndian, canon},
		{"1.2 as is", canon.String(), "1.2", binary.LittleEndian, canon},
		{"1.0 as is on big-endian", canon.String(), "1.0", binary.BigEndian, canon},
		{"external as is", canon.String(), "external:imsm", binary.LittleEndian, canon},
	}
	for _, tt := range tests {
		c := qt.New(t)
		c.Run(tt.name, func(c *qt.C) {
			fsys := newTree(c, arrayTree("md0", map[string]string{"uuid": tt.raw + "\n", "metadata_version": tt.meta + "\n"}))
			a, err := fsys.WithByteOrder(tt.order).Array("md0")
			c.Assert(err, qt.IsNil)
			got, err := a.UUID()
			c.Assert(err, qt.IsNil)
			c.Assert(got, qt.Equals, tt.want)
		})
	}
	c := qt.New(t)
	// The conversion is its own inverse.
	raw := uuid.MustParse(leSysfs)
	c.Assert(swapWords(swapWords(raw)), qt.Equals, raw)
	fsys, err := NewFS(c.TempDir())
	c.Assert(err, qt.IsNil)
	c.Assert(fsys.ByteOrder(), qt.Equals, hostByteOrder())
}

const memberTree = `l "block/md0" "../devices/virtual/block/md0"
f "devices/virtual/block/md0/dev" "9:0\n"
d "devices/virtual/block/md0/md"
f "devices/virtual/block/md0/md/level" "raid5\n"
l "devices/virtual/block/md0/md/rd0" "dev-vdb"
l "devices/virtual/block/md0/md/rd1" "dev-sda1"
f "devices/virtual/block/md0/md/dev-vdb/state" "in_sync,write_mostly,failfast\n"
f "devices/virtual/block/md0/md/dev-vdb/slot" "0\n"
f "devices/virtual/block/md0/md/dev-vdb/errors" "3\n"
f "devices/virtual/block/md0/md/dev-vdb/offset" "2048\n"
f "devices/virtual/block/md0/md/dev-vdb/new_offset" "2048\n"
f "devices/virtual/block/md0/md/dev-vdb/size" "32752\n"
f "devices/virtual/block/md0/md/dev-vdb/recovery_start" "none\n"
f "devices/virtual/block/md0/md/dev-vdb/bad_blocks" "8 16\n1024 8\n"
f "devices/virtual/block/md0/md/dev-vdb/unacknowledged_bad_blocks" ""
f "devices/virtual/block/md0/md/dev-vdb/ppl_sector" "0\n"
f "devices/virtual/block/md0/md/dev-vdb/ppl_size" "0\n"
l "devices/virtual/block/md0/md/dev-vdb/block" "../../../../../pci0000:00/0000:00:10.0/virtio2/block/vdb"
f "devices/virtual/block/md0/md/dev-sda1/state" "in_sync,want_replacement\n"
f "devices/virtual/block/md0/md/dev-sda1/slot" "1\n"
l "devices/virtual/block/md0/md/dev-sda1/block" "../../../../../pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1"
f "devices/virtual/block/md0/md/dev-vdc/state" "spare,replacement\n"
f "devices/virtual/block/md0/md/dev-vdc/slot" "1\n"
f "devices/virtual/block/md0/md/dev-vdc/recovery_start" "1024\n"
f "devices/virtual/block/md0/md/dev-vdd/state" "faulty\n"
f "devices/virtual/block/md0/md/dev-vdd/slot" "none\n"
f "devices/virtual/block/md0/md/dev-vdd/unacknowledged_bad_blocks" "4096 8\n"
f "devices/virtual/block/md0/md/dev-vde/state" "journal,in_sync\n"
f "devices/virtual/block/md0/md/dev-vde/slot" "journal\n"
f "devices/virtual/block/md0/md/dev-vdf/state" "spare,future_flag\n"
f "devices/virtual/block/md0/md/dev-vdf/slot" "none\n"
f "devices/virtual/block/md0/md/dev-vdf/recovery_start" "0\n"
f "devices/virtual/block/md0/md/dev-vdf/bad_blocks" "8 sixteen\n"
f "devices/virtual/block/md0/md/dev-vdg/slot" "-3\n"
d "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"
d "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1"
`

func TestMembers(t *testing.T) {
	c := qt.New(t)
	a, err := newTree(c, memberTree).Array("md0")
	c.Assert(err, qt.IsNil)
	ms, err := a.Members()
	c.Assert(err, qt.IsNil)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name())
	}
	c.Assert(names, qt.DeepEquals, []string{"sda1", "vdb", "vdc", "vdd", "vde", "vdf", "vdg"})

	links, err := a.SlotLinks()
	c.Assert(err, qt.IsNil)
	c.Assert(links, qt.DeepEquals, map[int]string{0: "dev-vdb", 1: "dev-sda1"})

	_, err = a.Member("vdz")
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)

	m := func(name string) Member {
		m, err := a.Member(name)
		c.Assert(err, qt.IsNil)
		return m
	}
	bl, err := m("vdb").Block()
	c.Assert(err, qt.IsNil)
	c.Assert(bl, qt.DeepEquals, BlockLink{Name: "vdb", Dir: "devices/pci0000:00/0000:00:10.0/virtio2/block/vdb"})
	bl, err = m("sda1").Block()
	c.Assert(err, qt.IsNil)
	c.Assert(bl.Name, qt.Equals, "sda1")
	_, err = m("vdc").Block()
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)

	type mg func(Member) (any, error)
	mgf := func(f func(Member) (any, error)) mg { return f }
	state := mgf(func(m Member) (any, error) { return m.State() })
	slot := mgf(func(m Member) (any, error) { return m.Slot() })
	bad := mgf(func(m Member) (any, error) { return m.BadBlocks() })
	unack := mgf(func(m Member) (any, error) { return m.UnacknowledgedBadBlocks() })
	rec := mgf(func(m Member) (any, error) { return m.RecoveryStart() })
	num := func(f func(Member) (uint64, error)) mg { return func(m Member) (any, error) { return f(m) } }

	tests := []struct {
		name   string
		member string
		get    mg
		want   any
		isErr  error
	}{
		{"state list", "vdb", state, MemberState{FlagInSync, FlagWriteMostly, FlagFailFast}, nil},
		{"state want_replacement", "sda1", state, MemberState{FlagInSync, FlagWantReplacement}, nil},
		{"state replacement", "vdc", state, MemberState{FlagSpare, FlagReplacement}, nil},
		{"state unknown flag kept", "vdf", state, MemberState{FlagSpare, "future_flag"}, nil},
		{"slot N", "vdb", slot, Slot(0), nil},
		{"slot shared by replacement", "vdc", slot, Slot(1), nil},
		{"slot none", "vdd", slot, SlotNone, nil},
		{"slot journal", "vde", slot, SlotJournal, nil},
		{"slot negative", "vdg", slot, nil, ErrFormat},
		{"errors", "vdb", num(Member.Errors), uint64(3), nil},
		{"offset", "vdb", num(Member.Offset), uint64(2048), nil},
		{"new_offset", "vdb", num(Member.NewOffset), uint64(2048), nil},
		{"size KiB", "vdb", num(Member.Size), uint64(32752), nil},
		{"ppl_sector", "vdb", num(Member.PPLSector), uint64(0), nil},
		{"ppl_size", "vdb", num(Member.PPLSize), uint64(0), nil},
		{"recovery_start none", "vdb", rec, Optional[uint64]{}, nil},
		{"recovery_start rebuilding", "vdc", rec, Some(uint64(1024)), nil},
		{"recovery_start idle spare", "vdf", rec, Some(uint64(0)), nil},
		{"bad_blocks", "vdb", bad, []BadBlock{{8, 16}, {1024, 8}}, nil},
		{"bad_blocks junk", "vdf", bad, nil, ErrFormat},
		{"unacknowledged empty", "vdb", unack, []BadBlock(nil), nil},
		{"unacknowledged", "vdd", unack, []BadBlock{{4096, 8}}, nil},
		{"missing attribute", "vde", num(Member.Errors), nil, fs.ErrNotExist},
	}
	for _, tt := range tests {
		c.Run(tt.name, func(c *qt.C) {
			got, err := tt.get(m(tt.member))
			if tt.isErr != nil {
				c.Assert(err, qt.ErrorIs, tt.isErr)
				return
			}
			c.Assert(err, qt.IsNil)
			c.Assert(got, qt.DeepEquals, tt.want)
		})
	}
}

func TestMemberState(t *testing.T) {
	c := qt.New(t)
	s := ParseMemberState("in_sync,write_mostly,blocked,write_error,journal,external_bbl,quantum")
	c.Assert(s.Has(FlagInSync), qt.IsTrue)
	c.Assert(s.Has(FlagFaulty), qt.IsFalse)
	c.Assert(s.Unknown(), qt.DeepEquals, []MemberFlag{"quantum"})
	c.Assert(s.String(), qt.Equals, "in_sync,write_mostly,blocked,write_error,journal,external_bbl,quantum")
	c.Assert(ParseMemberState(""), qt.IsNil)
	c.Assert(SlotNone.String(), qt.Equals, "none")
	c.Assert(SlotJournal.String(), qt.Equals, "journal")
	c.Assert(Slot(3).String(), qt.Equals, "3")
	c.Assert(Some(uint64(5)).String(), qt.Equals, "5")
	c.Assert(Optional[uint64]{}.String(), qt.Equals, "none")
	c.Assert(Reshaped{4, 3}.String(), qt.Equals, "4 (3)")
	c.Assert(BitmapLocation{Kind: "offset", Offset: 8}.String(), qt.Equals, "+8")
}

func TestWrites(t *testing.T) {
	const tree = `l "block/md0" "../devices/virtual/block/md0"
f "devices/virtual/block/md0/md/sync_action" "idle\n"
f "devices/virtual/block/md0/md/array_state" "clean\n"
w "devices/virtual/block/md0/md/new_dev" "permission denied"
f "devices/virtual/block/md0/md/sync_max" "max\n"
f "devices/virtual/block/md0/md/sync_min" "0\n"
f "devices/virtual/block/md0/md/dev-vdb/state" "in_sync\n"
f "devices/virtual/block/md0/md/dev-vdb/slot" "0\n"
f "devices/virtual/block/md0/md/dev-vdb/recovery_start" "none\n"
`
	tests := []struct {
		name string
		do   func(a Array, m Member) error
		attr string // below md/
		want string
	}{
		{"sync_action", func(a Array, _ Member) error { return a.SetSyncAction(ActionFrozen) }, "sync_action", "frozen"},
		{"array_state", func(a Array, _ Member) error { return a.SetState(StateReadAuto) }, "array_state", "read-auto"},
		{"new_dev", func(a Array, _ Member) error { return a.NewDev(DevNum{254, 16}) }, "new_dev", "254:16"},
		{"sync_max", func(a Array, _ Member) error { return a.SetSyncMax(4096) }, "sync_max", "4096"},
		{"sync_max reset", func(a Array, _ Member) error { return a.ResetSyncMax() }, "sync_max", "max"},
		{"sync_min", func(a Array, _ Member) error { return a.SetSyncMin(1024) }, "sync_min", "1024"},
		{"writemostly token", func(_ Array, m Member) error { return m.WriteState(CmdWriteMostly) }, "dev-vdb/state", "writemostly"},
		{"insync token", func(_ Array, m Member) error { return m.WriteState(CmdInSync) }, "dev-vdb/state", "insync"},
		{"clear want_replacement", func(_ Array, m Member) error { return m.WriteState(CmdClearWantReplacement) }, "dev-vdb/state", "-want_replacement"},
		{"re-add", func(_ Array, m Member) error { return m.WriteState(CmdReAdd) }, "dev-vdb/state", "re-add"},
		{"slot N", func(_ Array, m Member) error { return m.SetSlot(2) }, "dev-vdb/slot", "2"},
		{"slot none", func(_ Array, m Member) error { return m.SetSlot(SlotNone) }, "dev-vdb/slot", "none"},
		{"recovery_start", func(_ Array, m Member) error { return m.SetRecoveryStart(64) }, "dev-vdb/recovery_start", "64"},
	}
	for _, tt := range tests {
		c := qt.New(t)
		c.Run(tt.name, func(c *qt.C) {
			a, err := newTree(c, tree).Array("md0")
			c.Assert(err, qt.IsNil)
			m, err := a.Member("vdb")
			c.Assert(err, qt.IsNil)
			c.Assert(tt.do(a, m), qt.IsNil)
			// The write replaces the content only because a plain file
			// is not truncated on open: read the prefix. A write-only
			// attribute (new_dev) is made readable first: only root
			// reads it as it is.
			c.Assert(os.Chmod(a.Path(tt.attr), 0o600), qt.IsNil)
			b, err := os.ReadFile(a.Path(tt.attr))
			c.Assert(err, qt.IsNil)
			c.Assert(strings.HasPrefix(string(b), tt.want), qt.IsTrue, qt.Commentf("%q", b))
		})
	}
}

func TestWriteErrors(t *testing.T) {
	c := qt.New(t)
	fsys := newTree(c, `l "block/md0" "../devices/virtual/block/md0"
f "devices/virtual/block/md0/md/level" "raid0\n"
d "devices/virtual/block/md0/md/dev-vdb"
`)
	a, err := fsys.Array("md0")
	c.Assert(err, qt.IsNil)
	m, err := a.Member("vdb")
	c.Assert(err, qt.IsNil)

	// A missing attribute is not created.
	err = a.SetSyncAction(ActionCheck)
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	_, err = os.Stat(a.Path("sync_action"))
	c.Assert(err, qt.ErrorIs, fs.ErrNotExist)
	c.Assert(m.WriteState(CmdFaulty), qt.ErrorIs, fs.ErrNotExist)

	// The kernel's errno reaches the caller: /dev/full fails every write
	// with ENOSPC, which is also what slot returns for n >= raid_disks.
	if _, err := os.Stat("/dev/full"); err != nil {
		c.Skip("no /dev/full")
	}
	c.Assert(os.Symlink("/dev/full", m.Path("slot")), qt.IsNil)
	err = m.SetSlot(7)
	c.Assert(err, qt.ErrorIs, unix.ENOSPC)
	var pe *fs.PathError
	c.Assert(errors.As(err, &pe), qt.IsTrue)
	c.Assert(pe.Op, qt.Equals, "write")

	c.Assert(m.SetSlot(SlotJournal), qt.ErrorIs, fs.ErrInvalid)
}

// TestMemberStateFailed: the lists md.c state_show prints (6.1 to 7.2).
// "faulty" beside in_sync or spare is a member with bad blocks not yet
// recorded, which has not failed.
func TestMemberStateFailed(t *testing.T) {
	for s, want := range map[string]bool{
		"faulty":                           true, // failed, out of its slot
		"faulty,blocked":                   true, // failed, not yet unblocked
		"faulty,write_mostly":              true,
		"faulty,journal,blocked":           true, // a failed journal
		"faulty,in_sync,blocked":           false,
		"faulty,in_sync,write_mostly":      false,
		"faulty,blocked,spare":             false, // being rebuilt, met a bad sector
		"faulty,blocked,spare,replacement": false,
		"in_sync":                          false,
		"spare":                            false,
		"":                                 false,
	} {
		st := ParseMemberState(s)
		qt.Check(t, st.Failed(), qt.Equals, want, qt.Commentf("%q", s))
		pending := strings.Contains(s, "faulty") && !want
		qt.Check(t, st.BadBlocksPending(), qt.Equals, pending, qt.Commentf("%q", s))
	}
}
