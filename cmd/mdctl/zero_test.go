package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestZeroSuperblockCLI: a usage error exits 80; a refusal exits 2 with
// one line, prints the JSON outcome with --json, and leaves the file as
// it was (regular files are never devices for mdctl).
func TestZeroSuperblockCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := stopFixture(t)
	img := filepath.Join(t.TempDir(), "disk")
	want := make([]byte, 1<<20)
	want[4096] = 0xfc // not an md superblock: never looked at
	c.Assert(os.WriteFile(img, want, 0o644), qt.IsNil)

	code, out, errOut := runCLI(t, append([]string{"zero-superblock"}, flags...)...)
	c.Check(code, qt.Equals, exitUsage, qt.Commentf("%s%s", out, errOut))

	for _, dry := range []string{"--dry-run", ""} {
		args := []string{"zero-superblock", img}
		if dry != "" {
			args = append(args, dry)
		}
		code, out, errOut := runCLI(t, append(args, flags...)...)
		c.Check(code, qt.Equals, exitRefused, qt.Commentf("%s%s", out, errOut))
		c.Check(out, qt.Equals, "")
		c.Check(errOut, qt.Matches, `mdctl: error: md: refusing to erase the md superblock of .*/disk: it is not a block device\n`)
	}
	code, out, _ = runCLI(t, append([]string{"zero-superblock", "--json", img}, flags...)...)
	c.Check(code, qt.Equals, exitRefused)
	var rep struct {
		Result string `json:"result"`
		Error  string `json:"error"`
	}
	c.Assert(json.Unmarshal([]byte(out), &rep), qt.IsNil, qt.Commentf("%s", out))
	c.Check(rep.Result, qt.Equals, "refused")
	c.Check(rep.Error, qt.Matches, `.*it is not a block device`)
	b, err := os.ReadFile(img)
	c.Assert(err, qt.IsNil)
	c.Check(b, qt.DeepEquals, want)
}
