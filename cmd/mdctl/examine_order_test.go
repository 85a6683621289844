package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/superblock/superblocktest"
)

// orderDevices returns 200 paths in a temporary directory, named by
// their position: symlinks to real member images (1.x and 0.90), to a
// copy of one with a damaged checksum, and to files that are not members
// (zeros, too small, a directory, a FIFO, a name that does not exist),
// cycled so that good and bad ones alternate unevenly.
func orderDevices(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var targets []string
	n1, n090 := 0, 0
	for _, img := range superblocktest.Images(t) {
		if !strings.HasPrefix(img.Name, "fixtures/") {
			continue
		}
		sb := examine.Inspect(img.ReaderAt, img.Size, img.Name).Superblock()
		switch {
		case sb == nil:
			continue
		case sb.Version == superblock.Version090 && n090 < 3:
			n090++
		case sb.Version.Is1x() && n1 < 9:
			n1++
		default:
			continue
		}
		targets = append(targets, superblocktest.WriteFile(t, img, filepath.Join(dir, fmt.Sprintf("img%d", len(targets)))))
	}
	if n1 == 0 || n090 == 0 {
		superblocktest.Missing(t, "no 1.x and 0.90 fixtures")
	}
	// A damaged copy: one byte of the first image's superblock flipped.
	first := examine.InspectPath(targets[0])
	qt.Assert(t, first.Status, qt.Equals, examine.OK)
	damaged := filepath.Join(dir, "damaged")
	b, err := os.ReadFile(targets[0])
	qt.Assert(t, err, qt.IsNil)
	b[first.Candidate.Offset+40] ^= 0x20 // in set_name
	qt.Assert(t, os.WriteFile(damaged, b, 0o644), qt.IsNil)
	zero := filepath.Join(dir, "zero")
	qt.Assert(t, os.WriteFile(zero, make([]byte, 1<<20), 0o644), qt.IsNil)
	tiny := filepath.Join(dir, "tiny")
	qt.Assert(t, os.WriteFile(tiny, make([]byte, 100), 0o644), qt.IsNil)
	sub := filepath.Join(dir, "dir")
	qt.Assert(t, os.Mkdir(sub, 0o755), qt.IsNil)
	fifo := filepath.Join(dir, "fifo")
	qt.Assert(t, syscall.Mkfifo(fifo, 0o644), qt.IsNil)
	bad := []string{damaged, zero, tiny, sub, fifo, filepath.Join(dir, "missing")}

	var paths []string
	for i := 0; len(paths) < 200; i++ {
		target := targets[i%len(targets)]
		if i%7 == 3 || i%11 == 5 {
			target = bad[i%len(bad)]
		}
		p := filepath.Join(dir, fmt.Sprintf("dev%03d", i))
		qt.Assert(t, os.Symlink(target, p), qt.IsNil)
		paths = append(paths, p)
	}
	return paths
}

// TestExamineManyKeepsArgumentOrder (issue 14): examine reads devices in
// parallel, but prints what examining one device after the other prints:
// each device's text, then its diagnostics, in argument order, on stdout
// and stderr apart and on one stream, and its --json array in that
// order. The expected output is put together from one call per device.
func TestExamineManyKeepsArgumentOrder(t *testing.T) {
	c := qt.New(t)
	paths := orderDevices(t)
	roots := []string{"--sysfs", t.TempDir(), "--dev", t.TempDir()}
	run := func(combined bool, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		stderr := &errb
		if combined {
			stderr = &out
		}
		code := -1
		ret := runAt(append(append([]string{"examine"}, roots...), args...), &out, stderr, func(c int) {
			if code < 0 {
				code = c
			}
		}, func() time.Time { return time.Now().UTC() })
		if code < 0 {
			code = ret
		}
		return out.String(), errb.String(), code
	}

	var wantOut, wantErr, wantBoth strings.Builder
	var wantJSON []json.RawMessage
	worst, failed := 0, 0
	printed := false
	for _, p := range paths {
		out, errs, code := run(false, p)
		both, _, _ := run(true, p)
		if out != "" {
			if printed {
				wantOut.WriteString("\n")
				wantBoth.WriteString("\n")
			}
			printed = true
		}
		wantOut.WriteString(out)
		wantErr.WriteString(errs)
		wantBoth.WriteString(both)
		worst = max(worst, code)
		if code != 0 {
			failed++
		}
		js, _, _ := run(false, "--json", p)
		var one []json.RawMessage
		c.Assert(json.Unmarshal([]byte(js), &one), qt.IsNil)
		c.Assert(one, qt.HasLen, 1)
		wantJSON = append(wantJSON, one[0])
	}
	c.Assert(failed > 20 && failed < 100, qt.IsTrue, qt.Commentf("%d of %d failed: a mix is wanted", failed, len(paths)))
	summary := fmt.Sprintf("mdctl: error: %d of %d devices have problems (worst: %v)\n", failed, len(paths), examine.Status(worst))

	out, errs, code := run(false, paths...)
	c.Check(code, qt.Equals, worst)
	c.Check(out, qt.Equals, wantOut.String())
	c.Check(errs, qt.Equals, wantErr.String()+summary)

	both, _, _ := run(true, paths...)
	c.Check(both, qt.Equals, wantBoth.String()+summary)

	// A file and a dup of it, as 2>&1 gives: one stream, written through
	// one buffer.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	c.Assert(err, qt.IsNil)
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	c.Assert(err, qt.IsNil)
	g := os.NewFile(uintptr(fd), "dup")
	defer g.Close()
	code = -1
	ret := runAt(append(append([]string{"examine"}, roots...), paths...), f, g, func(c int) {
		if code < 0 {
			code = c
		}
	}, func() time.Time { return time.Now().UTC() })
	if code < 0 {
		code = ret
	}
	c.Check(code, qt.Equals, worst)
	b, err := os.ReadFile(f.Name())
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Equals, wantBoth.String()+summary)

	js, _, code := run(false, append([]string{"--json"}, paths...)...)
	c.Check(code, qt.Equals, worst)
	var got []json.RawMessage
	c.Assert(json.Unmarshal([]byte(js), &got), qt.IsNil)
	c.Assert(got, qt.HasLen, len(wantJSON))
	for i := range got {
		c.Assert(compactJSON(t, got[i]), qt.Equals, compactJSON(t, wantJSON[i]), qt.Commentf("element %d (%s)", i, paths[i]))
	}
}

// TestSameStream: stdout and stderr are one stream when they are one
// buffer or share one open file description (2>&1), and two when the
// same file is opened twice (each has its own offset) or they differ.
func TestSameStream(t *testing.T) {
	c := qt.New(t)
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	c.Assert(err, qt.IsNil)
	defer f.Close()
	if !sameDescription(f, f) {
		t.Skip("kcmp(2) is not available")
	}
	fd, err := syscall.Dup(int(f.Fd()))
	c.Assert(err, qt.IsNil)
	dup := os.NewFile(uintptr(fd), "dup")
	defer dup.Close()
	again, err := os.OpenFile(path, os.O_WRONLY, 0)
	c.Assert(err, qt.IsNil)
	defer again.Close()
	var b1, b2 bytes.Buffer
	c.Check(sameStream(f, dup), qt.IsTrue)
	c.Check(sameStream(f, again), qt.IsFalse)
	c.Check(sameStream(f, &b1), qt.IsFalse)
	c.Check(sameStream(&b1, &b1), qt.IsTrue)
	c.Check(sameStream(&b1, &b2), qt.IsFalse)
	c.Check(sameStream(io.Discard, io.Discard), qt.IsFalse)
}

func compactJSON(t *testing.T, m json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	qt.Assert(t, json.Compact(&b, m), qt.IsNil)
	return b.String()
}

// TestWriteJSONArray: the array put together from one json.MarshalIndent
// per element is byte for byte what encoding/json's Encoder with
// SetIndent("", "  ") writes for the slice, as examine --json wrote it.
func TestWriteJSONArray(t *testing.T) {
	c := qt.New(t)
	var reports []jsonReport
	for _, img := range superblocktest.Images(t) {
		reports = append(reports, toJSON(examine.Inspect(img.ReaderAt, img.Size, img.Name)))
		if len(reports) == 5 {
			break
		}
	}
	reports = append(reports, toJSON(&examine.Report{Device: "<html> & \x1b[31m", Status: examine.Unreadable, Err: fmt.Errorf("\u2028 odd")}))
	for n := range len(reports) + 1 {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		c.Assert(enc.Encode(reports[:n]), qt.IsNil)
		var objs [][]byte
		for _, r := range reports[:n] {
			b, err := json.MarshalIndent(r, "  ", "  ")
			c.Assert(err, qt.IsNil)
			objs = append(objs, b)
		}
		var got bytes.Buffer
		c.Assert(writeJSONArray(&got, objs), qt.IsNil)
		c.Assert(got.String(), qt.Equals, want.String(), qt.Commentf("%d reports", n))
	}
}
