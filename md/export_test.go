package md

import (
	"testing"

	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
)

func TestExportKey(t *testing.T) {
	for dir, want := range map[string]string{
		"dev-sda1":          "dev_sda1",
		"dev-nvme0n1p2":     "dev_nvme0n1p2",
		"dev-cciss!c0d0":    "dev_cciss_c0d0",
		"dev-dm-3":          "dev_dm_3",
		"dev-x\xc3\xa9y":    "dev_x__y", // bytes, as C's isalnum sees them
		"dev-a=b\nMD_LEVEL": "dev_a_b_MD_LEVEL",
	} {
		qt.Check(t, ExportKey(dir), qt.Equals, want, qt.Commentf("%q", dir))
	}
}

func TestUdevSafe(t *testing.T) {
	for v, want := range map[string]bool{
		"boot":         true,
		"talos:boot":   true,
		"a b":          true, // inside a value udev keeps it
		"/dev/vda":     true,
		"":             false,
		" boot":        false,
		"boot ":        false,
		"\"boot\"":     false,
		"'boot":        false,
		"a\nMD_UUID=x": false,
		"a\rb":         false,
		"a\x00b":       false,
		"a\x7fb":       false,
		"a\tb":         false,
	} {
		qt.Check(t, UdevSafe(v), qt.Equals, want, qt.Commentf("%q", v))
	}
}

// TestMapUUID: the map's 1.x UUID text is MD_UUID with each group byte
// reversed (mapfile.UUIDText); 0.90's is MD_UUID itself.
func TestMapUUID(t *testing.T) {
	u := uuid.MustParse("8e6788b8-45c6-2e85-8e39-bc2e99106387")
	for _, v := range []superblock.Version{superblock.Version090, superblock.Version10, superblock.Version12} {
		sb := &superblock.Superblock{SetUUID: u, Version: v}
		e := mapfile.Entry{Dev: "md127", Metadata: v.String(), UUID: mapfile.UUIDText(sb), Path: "/dev/md/x"}
		qt.Check(t, mapUUID(e), qt.Equals, "8e6788b8:45c62e85:8e39bc2e:99106387", qt.Commentf("%v: map %s", v, e.UUID))
	}
	qt.Check(t, mapUUID(mapfile.Entry{Metadata: "1.2", UUID: "01234567:89abcdef:00000000:ffffffff"}), qt.Equals, "67452301:efcdab89:00000000:ffffffff")
}

func TestExportName(t *testing.T) {
	sb := func(v superblock.Version, name string) *superblock.Superblock {
		s := &superblock.Superblock{Version: v}
		copy(s.SetName[:], name)
		return s
	}
	tests := []struct {
		sb   *superblock.Superblock
		want string
		ok   bool
		err  bool
	}{
		{sb(superblock.Version12, "talos:boot"), "talos:boot", true, false},
		{sb(superblock.Version12, ""), "", false, false},
		{sb(superblock.Version12, "\n"), "", false, false},
		{sb(superblock.Version12, "a b\nc"), "a_b", true, false},
		{sb(superblock.Version12, "x$y"), "", false, true},
		{sb(superblock.Version090, "ignored"), "", false, false},
		{nil, "", false, false},
	}
	for _, tt := range tests {
		got, ok, err := ExportName(tt.sb)
		qt.Check(t, got, qt.Equals, tt.want)
		qt.Check(t, ok, qt.Equals, tt.ok)
		if tt.err {
			qt.Check(t, err, qt.ErrorIs, ErrUnsafeName)
		} else {
			qt.Check(t, err, qt.IsNil)
		}
	}
}
