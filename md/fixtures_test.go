package md

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/internal/sysfstree"
	"github.com/google/uuid"
)

// The test fixtures of package md, all built on internal/fixture (the real
// captures under testdata/) and internal/sysfstree (sysfs trees from
// manifests). A case is loaded with fixture.Named or fixture.All.

// fixtureManager rebuilds a captured system in a fresh temporary directory:
// the sysfs tree from the manifest, and each member device as a sparse image
// under the dev root, so that Discover reads real superblocks. Each opt
// adjusts the Config before Open.
func fixtureManager(t testing.TB, c *fixture.Case, opts ...func(*Config)) *Manager {
	t.Helper()
	sys, dev := c.System(t)
	cfg := &Config{SysRoot: sys, DevRoot: dev}
	for _, o := range opts {
		o(cfg)
	}
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fixtureSystem is fixtureManager that also returns the sysfs root.
func fixtureSystem(t testing.TB, fc *fixture.Case) (*Manager, string) {
	t.Helper()
	m := fixtureManager(t, fc)
	return m, m.FS().Root()
}

// clockManager rebuilds the named capture with a clock that reads *now.
func clockManager(t *testing.T, name string, now *time.Time) *Manager {
	t.Helper()
	return fixtureManager(t, fixture.Named(t, name), func(c *Config) { c.Now = func() time.Time { return *now } })
}

// eightArrays materializes the real eight-array capture and returns a
// Manager on it with the sysfs and dev roots.
func eightArrays(t testing.TB) (m *Manager, sys, dev string) {
	t.Helper()
	m = fixtureManager(t, fixture.Named(t, "eight-arrays"))
	return m, m.FS().Root(), m.devRoot
}

// fixtureArray returns the one array of the named real capture.
func fixtureArray(t testing.TB, name string) Array {
	t.Helper()
	m := fixtureManager(t, fixture.Named(t, name))
	r, err := m.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Arrays) != 1 {
		t.Fatalf("%s: %d arrays", name, len(r.Arrays))
	}
	return r.Arrays[0]
}

// replaceRig is a captured system rebuilt in a temporary directory with a
// fake kernel, a run directory and an empty mount table.
type replaceRig struct {
	m    *Manager
	k    *fakeKernel
	fc   *fixture.Case
	dev  string // dev root
	name string // array kernel name
}

// newReplaceRig is fixtureManager on the named capture with a fake kernel,
// a run directory and an empty mount table.
func newReplaceRig(t testing.TB, fixtureName string) *replaceRig {
	t.Helper()
	fc := fixture.Named(t, fixtureName)
	m := fixtureManager(t, fc)
	dir := t.TempDir()
	mi := filepath.Join(dir, "mountinfo")
	if err := os.WriteFile(mi, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	k := &fakeKernel{fs: m.fs}
	m.ops = ops{k: k, runDir: filepath.Join(dir, "run"), mountInfo: mi}
	m.mapDir = filepath.Join(dir, "mdadm")
	return &replaceRig{m: m, k: k, fc: fc, dev: m.devRoot, name: fc.Info.Array}
}

// replaceOn sets up a rig for an executor test: a fake kernel that shows
// the candidate "vdz" as added, and a blank 64 MiB candidate.
func replaceOn(t *testing.T, fixtureName string) (*replaceRig, string) {
	r := newReplaceRig(t, fixtureName)
	r.k.show = true
	r.k.recover = "recover"
	r.m.ops.verifyTimeout = 200 * time.Millisecond
	return r, r.candidate(t, "vdz", 64<<20)
}

// candidate creates a sparse image of size bytes under the dev root,
// replacing an earlier one.
func (r *replaceRig) candidate(t testing.TB, name string, size int64) string {
	t.Helper()
	p := filepath.Join(r.dev, name)
	if err := createImage(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkNothingWritten checks what a refused request leaves: no kernel
// call, and the candidate at path byte-identical to before.
func (r *replaceRig) checkNothingWritten(c *qt.C, path string, before []byte) {
	c.Helper()
	c.Check(r.k.Calls(), qt.HasLen, 0)
	c.Check(bytes.Equal(readImage(c, path), before), qt.IsTrue, qt.Commentf("the candidate changed"))
}

// plan plans a replace, from the facts f, onto the image at path (no old
// member named).
func (r *replaceRig) plan(f arrayFacts, path string) (*Plan, error) {
	return planReplace(f, r.m.candidateFacts(path, true), ReplaceRequest{Array: r.name, With: path, AllowImageFile: true}, uuid.New())
}

func (r *replaceRig) facts(t testing.TB, member string) arrayFacts {
	t.Helper()
	return r.m.arrayFacts(r.name, member)
}

// plugDisk adds a blank 64 MiB virtio disk named name at PCI address addr
// ("0000:00:11.0") to a captured sysfs tree, modelled on the capture's
// vda, and its image under the dev root.
func plugDisk(t testing.TB, sys, name, addr string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture.Named(t, "raid1-degraded-missing").Dir, "sysfs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("0000:00:10.0", addr, "virtio2", "virtio9", "vda", name, "254:0", "254:32", "mdtest-0", "new-"+name)
	var text strings.Builder
	text.WriteString(sysfstree.Header + "\n")
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "vda") && !strings.Contains(line, "0000:00:10.0") || strings.Contains(line, "holders/md0") || strings.Contains(line, "md/dev-") {
			continue
		}
		text.WriteString(r.Replace(line) + "\n")
	}
	entries, err := sysfstree.Parse(strings.NewReader(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	var fresh []sysfstree.Entry
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(sys, filepath.FromSlash(e.Path))); err == nil {
			continue
		}
		fresh = append(fresh, e)
	}
	if err := sysfstree.Materialize(sys, fresh); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(filepath.Dir(sys), "dev", name)
	if err := createImage(dev, 64<<20); err != nil {
		t.Fatal(err)
	}
}

// readImage returns the whole image.
func readImage(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeImage writes b into the existing image at off.
func writeImage(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkStatus returns the status of the named check, or "" if absent.
func checkStatus(p *Plan, name Check) CheckStatus {
	for _, ck := range p.Checks {
		if ck.Name == name {
			return ck.Status
		}
	}
	return ""
}

// createImage creates (or truncates) a sparse image of size bytes. (It
// is not vmtest.CreateImage so that md's host tests do not import the VM
// rig: scripts/test runs every package that does once per kernel.)
func createImage(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
