package main

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestBitmapCLI: usage errors exit 80; the dry run of adding a bitmap to
// the boot mirror (metadata 1.0) prints each member's write and the
// location, mdadm's place for it (16 sectors before the superblock);
// removing a bitmap it has not is refused.
func TestBitmapCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := stopFixture(t)
	for _, args := range [][]string{
		{"bitmap", "boot", "file"},
		{"bitmap", "boot", "none", "--chunk", "64"},
	} {
		code, out, errOut := runCLI(t, append(args, flags...)...)
		c.Check(code, qt.Equals, exitUsage, qt.Commentf("%v: %s%s", args, out, errOut))
	}
	code, out, errOut := runCLI(t, append([]string{"bitmap", "boot", "internal", "--dry-run"}, flags...)...)
	c.Assert(code, qt.Equals, exitOK, qt.Commentf("%s%s", out, errOut))
	c.Check(out, qt.Matches, `(?s)md127: would write the bitmap to vda: 4096 bytes at byte 67092480\.\nmd127: would write the bitmap to vdb: .*would set bitmap/location=-16 \(chunk 65536 KiB, 130944 sectors\); nothing written \(dry run\)\.\n`)
	code, _, errOut = runCLI(t, append([]string{"bitmap", "boot", "none"}, flags...)...)
	c.Check(code, qt.Equals, exitRefused)
	c.Check(errOut, qt.Matches, `mdctl: error: md: refusing to change the bitmap in md127: it has no bitmap\n`)
}
