//go:build vmtest

package main

import (
	"os"
	"sort"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
	"github.com/go-mdraid/mdraid/md/mapfile"
)

// exportCases are the arrays of issue 11's first boot that the export
// comparison covers, created by mdadm (no udev in the guest: mdadm makes
// the /dev/md/NAME links and the map file itself).
var exportCases = []struct {
	name  string // the /dev/md/ name
	disks int
	args  []string
}{
	{"boot", 2, []string{"--level=1", "--metadata=1.0", "--name=boot", "--homehost=talos", "--raid-devices=2"}},
	{"r5bitmap", 3, []string{"--level=5", "--metadata=1.2", "--bitmap=internal", "--raid-devices=3"}},
	{"legacy", 2, []string{"--level=1", "--metadata=0.90", "--raid-devices=2"}},
	{"r10", 4, []string{"--level=10", "--raid-devices=4"}},
}

// sortedKeys returns the KEY=VALUE lines of out sorted, without the
// lines udev drops (an empty value: mdadm prints MD_ARRAY_SIZE= below
// 5000 KiB, mdctl leaves the key out).
func sortedKeys(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasSuffix(l, "=") {
			continue
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines
}

// TestVMExportAgreesWithMdadm compares, on the real kernel, `mdctl
// status --export` (with and without --no-devices) with `mdadm --detail
// --export` for each array while it runs, and then `mdctl examine
// --export` with `mdadm --examine --export` for each member once it is
// stopped, key by key as sorted text, and checks the map line mdadm
// wrote (its UUID text and path). The one allowed difference is
// MD_RESHAPE_ACTIVE, which mdadm prints only since 4.5: when mdadm does
// not print it, mdctl's must be False (no array here reshapes) and is
// then left out of the comparison.
func TestVMExportAgreesWithMdadm(t *testing.T) {
	for _, tt := range exportCases {
		t.Run(tt.name, func(t *testing.T) {
			guest.RequireLevel(t, tt.args...)
			c := qt.New(t)
			disks := guest.ScratchDisks(t, tt.disks)
			dev := "/dev/md/" + tt.name
			args := append([]string{"--create", dev, "--run", "--assume-clean"}, tt.args...)
			for _, d := range disks {
				args = append(args, d.Path)
			}
			guest.Mdadm(c, args...)
			kname := guest.ArrayName(c, dev)
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					guest.RunMdadm("--stop", dev)
				}
				// Without udev the link outlives the array, and while
				// it resolves mdadm does not give its md number to a
				// later array (find_free_devnm): later tests that
				// count on the numbers they get must see the numbers
				// they got before this test existed.
				if fi, err := os.Lstat(dev); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					os.Remove(dev)
				}
			})

			for _, flags := range [][]string{nil, {"--no-devices"}} {
				want := guest.Mdadm(c, append(append([]string{"--detail", "--export"}, flags...), dev)...)
				got, stderr, code := mdctl(t, append(append([]string{"status", "--export"}, flags...), dev)...)
				c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
				c.Check(stderr, qt.Equals, "")
				w, g := sortedKeys(want), sortedKeys(got)
				if !strings.Contains(want, "MD_RESHAPE_ACTIVE=") {
					c.Check(g, qt.Contains, "MD_RESHAPE_ACTIVE=False", qt.Commentf("mdctl:\n%s", got))
					g = without(g, "MD_RESHAPE_ACTIVE=False")
				}
				c.Check(g, qt.DeepEquals, w, qt.Commentf("%s %v\nmdadm --detail --export:\n%s\nmdctl status --export:\n%s", dev, flags, want, got))
				// Every array here is in the map and has its link, and
				// the members are named by their kernel nodes although
				// /dev/disk/by-* links to them exist.
				c.Check(got, qt.Contains, "MD_DEVNAME="+tt.name+"\n")
				if flags == nil {
					for _, d := range disks {
						c.Check(got, qt.Contains, "_DEV="+d.Path+"\n")
					}
				}
			}

			// The map line mdadm wrote carries the UUID as mapfile.UUIDText
			// says (each group byte reversed for 1.x), which is how
			// status --export matched it above without a warning.
			entries, err := mapfile.Map{Dir: mapfile.DefaultDir}.Read()
			c.Assert(err, qt.IsNil)
			e, ok := mapfile.Find(entries, kname)
			c.Assert(ok, qt.IsTrue, qt.Commentf("no map entry for %s: %v", kname, entries))
			rep := examine.InspectPath(disks[0].Path)
			c.Assert(rep.Superblock(), qt.Not(qt.IsNil))
			c.Check(e.UUID, qt.Equals, mapfile.UUIDText(rep.Superblock()))
			c.Check(e.Path, qt.Equals, dev)

			guest.Mdadm(c, "--stop", dev)
			stopped = true
			for _, d := range disks {
				want := guest.Mdadm(c, "--examine", "--export", d.Path)
				got, stderr, code := mdctl(t, "examine", "--export", d.Path)
				c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", stderr))
				c.Check(sortedKeys(got), qt.DeepEquals, sortedKeys(want), qt.Commentf("%s\nmdadm --examine --export:\n%s\nmdctl examine --export:\n%s", d.Path, want, got))
			}
		})
	}
}

// without returns lines without the line l.
func without(lines []string, l string) []string {
	var out []string
	for _, x := range lines {
		if x != l {
			out = append(out, x)
		}
	}
	return out
}
