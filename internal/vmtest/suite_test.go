package vmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Scratch disks every guest test package gets.
const (
	suiteDisks    = 8
	suiteDiskSize = 64 << 20
)

// TestGuestPackages runs, for each package with "//go:build vmtest" test
// files, its test binary in a fresh VM with blank scratch disks. Only the
// tests named TestVM... run in the guest: the package's host tests have
// already run outside, and are slow under emulation.
func TestGuestPackages(t *testing.T) {
	r := NewTestRig(t)
	if r.Root == "" {
		t.Fatal("cannot find the module root")
	}
	pkgs, err := GuestPackages(t.Context(), r.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("no package has vmtest test files; the rig's own should be found")
	}
	bin := t.TempDir()
	for _, p := range pkgs {
		t.Run(p.Rel, func(t *testing.T) {
			exe := filepath.Join(bin, strings.ReplaceAll(p.Rel, "/", "_")+".test")
			start := time.Now()
			if err := BuildTest(t.Context(), r.Root, p.ImportPath, exe); err != nil {
				t.Fatal(err)
			}
			t.Logf("built %s in %v", p.ImportPath, time.Since(start).Round(time.Millisecond))
			guestExe := "/vmtest/bin/" + filepath.Base(exe)
			// One more disk after the scratch disks: 4Kn (4096-byte
			// logical blocks), for tests that need one
			// (guest.Disk4Kn).
			disks := TestDisks(t, suiteDisks, suiteDiskSize)
			kn := filepath.Join(t.TempDir(), "disk4kn.img")
			if err := CreateImage(kn, suiteDiskSize); err != nil {
				t.Fatal(err)
			}
			disks = append(disks, Disk{Path: kn, Slot: suiteDisks, LogicalBlockSize: 4096})
			// MDRAID_VM_RUN narrows the guest tests (a -run pattern
			// below the TestVM prefix), to run one of them while working.
			run := "-test.run=^TestVM"
			if v := os.Getenv("MDRAID_VM_RUN"); v != "" {
				run += "(" + v + ")"
			}
			// The md package's guest tests took 445 s on 6.1 on a
			// loaded host (2026-12-03), 2.7 times as long as on a quiet
			// one: the limits leave room for twice that.
			cfg := Config{
				Cmd:     []string{guestExe, "-test.v", "-test.timeout=15m", run},
				Dir:     "/src/" + p.Rel,
				Files:   map[string]string{guestExe: exe},
				Disks:   disks,
				Timeout: 16 * time.Minute,
			}
			// The host's promtool (Debian's prometheus package, dynamically
			// linked against the libc the guest has for mdadm), for the
			// guest tests that evaluate the alerting rules on a real
			// scrape: its directory is shared read-only, so that the
			// 48 MB binary is read only by the boots that run it.
			if pt, err := exec.LookPath("promtool"); err == nil {
				if pt, err = filepath.EvalSymlinks(pt); err == nil {
					cfg.Shares = append(cfg.Shares, Share{Tag: "promtool", HostDir: filepath.Dir(pt), GuestDir: "/vmtest/promtool", ReadOnly: true})
					cfg.Env = append(cfg.Env, "MDRAID_VM_PROMTOOL=/vmtest/promtool/"+filepath.Base(pt))
				}
			}
			// The newest Debian release's mdadm (scripts/vm-deps), a
			// second fixture tool for the create proof.
			if root, v, err := NewestMdadm(); err == nil {
				cfg.Shares = append(cfg.Shares, Share{Tag: "mdadmnewest", HostDir: root, GuestDir: "/vmtest/mdadm-newest", ReadOnly: true})
				cfg.Env = append(cfg.Env, "MDRAID_VM_MDADM_NEWEST=/vmtest/mdadm-newest", "MDRAID_VM_MDADM_NEWEST_VERSION="+v)
			}
			// Debian's node_exporter likewise, for the guest test that
			// compares its md collector with mdctl on live arrays.
			for _, name := range []string{"prometheus-node-exporter", "node_exporter"} {
				if ne, err := exec.LookPath(name); err == nil {
					if ne, err = filepath.EvalSymlinks(ne); err == nil {
						cfg.Shares = append(cfg.Shares, Share{Tag: "nodeexporter", HostDir: filepath.Dir(ne), GuestDir: "/vmtest/nodeexporter", ReadOnly: true})
						cfg.Env = append(cfg.Env, "MDRAID_VM_NODE_EXPORTER=/vmtest/nodeexporter/"+filepath.Base(ne))
					}
					break
				}
			}
			res, err := r.RunTest(t, cfg)
			if res != nil {
				t.Logf("VM ran %v", res.Duration.Round(time.Millisecond))
			}
			if err != nil {
				t.Fatalf("guest tests of %s failed: %v", p.ImportPath, err)
			}
			if strings.Contains(res.Console, "testing: warning: no tests to run") {
				t.Fatalf("%s has vmtest files but no test named TestVM...: name guest tests TestVM...", p.ImportPath)
			}
		})
	}
}
