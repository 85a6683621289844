package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// csumLine matches examine's checksum line.
var csumLine = regexp.MustCompile(`(?m)^ +Checksum : .*\n`)

// newerKernelMember writes the real capture fixtures/raid1-v1.2/vda (made
// on Linux 6.1) with its superblock changed by edit and re-encoded, as a
// newer kernel would have written it. It returns the path and mdadm
// 4.2's --examine text of the original, normalised as in
// TestExamineMatchesMdadm and without the device line.
func newerKernelMember(t *testing.T, edit func(*superblock.Superblock)) (path, mdadm string) {
	t.Helper()
	c := qt.New(t)
	img := superblocktest.ByName(t, "fixtures/raid1-v1.2/vda")
	dev := img.Bytes(t)
	sb, err := superblock.Decode(dev[4096:])
	c.Assert(err, qt.IsNil)
	c.Assert(sb.LogicalBlockSize, qt.Equals, uint32(0))
	edit(sb)
	b, err := sb.MarshalBinary()
	c.Assert(err, qt.IsNil)
	copy(dev[4096:], b)
	path = filepath.Join(t.TempDir(), "member")
	c.Assert(os.WriteFile(path, dev, 0o644), qt.IsNil)
	want := localTo.ReplaceAllString(img.Examine, "")
	return path, strings.TrimRight(want[strings.Index(want, "\n")+1:], "\n")
}

// TestExamineLogicalBlockSize: a superblock of Linux 6.19+ (issue 9) is
// healthy; examine shows logical_block_size in one extra line, matches
// mdadm everywhere else, and notes that older kernels refuse it.
func TestExamineLogicalBlockSize(t *testing.T) {
	c := qt.New(t)
	path, mdadm := newerKernelMember(t, func(sb *superblock.Superblock) { sb.LogicalBlockSize = 512 })
	out, stderr, code := mdctl(t, "examine", path)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
	const line = "  Logical Block : 512 bytes\n"
	c.Check(out, qt.Contains, "   Super Offset : 8 sectors\n"+line)
	got := strings.Replace(out[strings.Index(out, "\n")+1:], line, "", 1)
	// Only the checksum differs from the 6.1 capture: the word changed.
	got = csumLine.ReplaceAllString(got, "")
	c.Check(strings.TrimRight(got, "\n"), qt.Equals, csumLine.ReplaceAllString(mdadm, ""))
	c.Check(stderr, qt.Equals, "mdctl: "+path+`: note: logical_block_size is recorded (512 bytes, written by Linux 6.19 or later): kernels before 6.19 refuse to import this superblock ("does not have a valid v1.2 superblock, not importing!")`+"\n")

	out, _, code = mdctl(t, "examine", "--json", path)
	c.Assert(code, qt.Equals, 0)
	var reps []jsonReport
	c.Assert(json.Unmarshal([]byte(out), &reps), qt.IsNil)
	r := reps[0]
	c.Check(r.Status, qt.Equals, "ok")
	c.Check(r.Problems, qt.IsNil)
	c.Check(r.Warnings, qt.IsNil)
	c.Assert(r.Notes, qt.HasLen, 1)
	c.Check(r.Notes[0], qt.Contains, "kernels before 6.19 refuse to import")
	c.Check(r.Superblock.V1.LogicalBlockSizeBytes, qt.Equals, uint32(512))
	c.Check(r.Superblock.V1.UnknownFields, qt.IsNil)
}

// TestExamineUnknownField: padding holding a field we do not know is a
// warning about a newer kernel, not damage, and the exit code is 0.
func TestExamineUnknownField(t *testing.T) {
	c := qt.New(t)
	path, _ := newerKernelMember(t, func(sb *superblock.Superblock) {
		sb.LogicalBlockSize = 4096
		sb.Pad3[4] = 1 // byte 232
	})
	out, stderr, code := mdctl(t, "examine", path)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
	c.Check(out, qt.Contains, "  Logical Block : 4096 bytes\n")
	c.Check(out, qt.Contains, "       Checksum : ")
	c.Check(stderr, qt.Contains, "mdctl: "+path+": warning: written by a kernel newer than mdctl: padding holds a field mdctl does not know (pad3 word at byte 0xe8 = 0x1)")
	c.Check(stderr, qt.Contains, "note: logical_block_size is recorded (4096 bytes")
	c.Check(stderr, qt.Not(qt.Contains), "refuse this superblock")
	c.Check(stderr, qt.Not(qt.Contains), "damaged")

	out, _, code = mdctl(t, "examine", "--json", path)
	c.Assert(code, qt.Equals, 0)
	var reps []jsonReport
	c.Assert(json.Unmarshal([]byte(out), &reps), qt.IsNil)
	r := reps[0]
	c.Check(r.Status, qt.Equals, "ok")
	c.Check(r.ExitCode, qt.Equals, 0)
	c.Check(r.Error, qt.Equals, "")
	c.Check(r.Problems, qt.IsNil)
	c.Assert(r.Warnings, qt.HasLen, 1)
	c.Check(r.Warnings[0], qt.Contains, "pad3 word at byte 0xe8 = 0x1")
	c.Check(r.Superblock.V1.UnknownFields, qt.DeepEquals, []jsonUnknown{{Name: "pad3", OffsetBytes: 232, Value: 1}})
	c.Check(r.Superblock.V1.LogicalBlockSizeBytes, qt.Equals, uint32(4096))
}

// TestExamineBadLogicalBlockSize: a logical_block_size no kernel runs an
// array with is damage.
func TestExamineBadLogicalBlockSize(t *testing.T) {
	c := qt.New(t)
	path, _ := newerKernelMember(t, func(sb *superblock.Superblock) { sb.LogicalBlockSize = 1000 })
	_, stderr, code := mdctl(t, "examine", path)
	// The kernel imports it; only running the array can fail.
	c.Check(code, qt.Equals, 0)
	c.Check(stderr, qt.Contains, "warning: logical_block_size 1000 is not a power of two from 512 to 65536")
	c.Check(stderr, qt.Not(qt.Contains), "damaged")
}
