package md

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestKernelUUID0_90: the kernel shows a 0.90 array's UUID in md/uuid
// with each 32-bit word byte-swapped (capture eight-arrays, md3: md/uuid
// f92f64fb-a58f-a660-1622-e76b3961d72d, mdadm UUID=fb642ff9:60a68fa5:
// 6be72216:2dd76139). When no member's superblock can be read, status
// shows mdadm's UUID all the same, and a lookup by that UUID, which reads
// md/uuid and no superblock, finds md3.
func TestKernelUUID0_90(t *testing.T) {
	c := qt.New(t)
	m, _, dev := eightArrays(t)
	ctx := context.Background()
	const want = "fb642ff9-60a6-8fa5-6be7-22162dd76139"
	a, err := m.Status(ctx, "md3")
	c.Assert(err, qt.IsNil)
	c.Assert(a.Metadata, qt.Equals, "0.90")
	c.Assert(a.UUID, qt.Equals, want, qt.Commentf("from the superblocks"))
	for _, d := range []string{"vdg", "vdh"} {
		c.Assert(os.Rename(filepath.Join(dev, d), filepath.Join(dev, d+".away")), qt.IsNil)
	}
	a, err = m.Status(ctx, "md3")
	c.Assert(err, qt.IsNil)
	c.Assert(a.Members()[0].Events, qt.IsNil, qt.Commentf("no superblock read"))
	c.Assert(a.UUID, qt.Equals, want, qt.Commentf("from md/uuid"))
	for _, u := range []string{want, "fb642ff9:60a68fa5:6be72216:2dd76139"} {
		got, err := m.resolve(u)
		c.Assert(err, qt.IsNil)
		c.Assert(got, qt.Equals, "md3")
	}
}
