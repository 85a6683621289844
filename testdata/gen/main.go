// Command gen regenerates testdata/fixtures: real arrays made by mdadm on
// the Debian kernel in the VM rig (internal/vmtest), captured per case.
//
//	go run ./testdata/gen                 # all cases (scripts/gen-fixtures)
//	go run ./testdata/gen -run 'raid1-'   # only matching cases
//	MDRAID_VM_KERNEL=sid go run ./testdata/gen -run 'raid1-v1' -suffix -k7.2
//	                                      # on another kernel of the matrix
//
// On the host it builds itself for the guest, boots the rig with eight
// blank 64 MiB scratch disks and a writable 9p share, and runs itself
// there with -guest. The guest makes each case on vda..vdh, captures it
// into /out/<case>, and wipes the disks. When the VM succeeds, each
// generated case directory replaces the one in -out.
//
// Per case: <dev>.regions.gz and <dev>.examine.txt for every disk the case
// used, detail.txt, detail-export.txt, mdstat.txt, sysfs.txt and
// case.json (see internal/fixture).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/internal/vmtest"
)

func main() {
	guestMode := flag.Bool("guest", false, "run the cases (inside the VM)")
	out := flag.String("out", "", "output directory (default <module>/testdata/fixtures; /out in the guest)")
	run := flag.String("run", "", "only cases matching this regexp")
	list := flag.Bool("list", false, "list the cases and exit")
	suffix := flag.String("suffix", "", "append this to each case's name (e.g. -k7.2 for captures on another kernel of the matrix)")
	flag.Parse()
	re, err := regexp.Compile(*run)
	if err != nil {
		fatal(err)
	}
	if *list {
		for _, c := range cases {
			fmt.Printf("%-24s %s\n", c.name, c.desc)
		}
		return
	}
	if *guestMode {
		if err := runGuest(*out, re, *suffix); err != nil {
			fatal(err)
		}
		return
	}
	if err := runHost(*out, *run, *suffix); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

func runHost(out, run, suffix string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rig, err := vmtest.NewRig()
	if err != nil {
		return err
	}
	if rig.Root == "" {
		return fmt.Errorf("run from inside the module")
	}
	if out == "" {
		out = filepath.Join(rig.Root, "testdata", "fixtures")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// The share lives next to out so that finished cases move by rename.
	share, err := os.MkdirTemp(filepath.Dir(out), ".gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(share)
	work, err := os.MkdirTemp("", "mdraid-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	bin := filepath.Join(work, "gen")
	if err := vmtest.BuildProgram(ctx, rig.Root, "./testdata/gen", bin); err != nil {
		return err
	}
	disks, err := vmtest.ScratchDisks(work, 8, 64<<20)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := rig.Run(ctx, vmtest.Config{
		Cmd:     []string{"/vmtest/bin/gen", "-guest", "-out", "/out", "-run", run, "-suffix", suffix},
		Files:   map[string]string{"/vmtest/bin/gen": bin},
		Disks:   disks,
		Shares:  []vmtest.Share{{Tag: "out", HostDir: share, GuestDir: "/out"}},
		Timeout: 20 * time.Minute,
		Console: func(line string) { fmt.Fprintln(os.Stderr, "guest:", line) },
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: VM ran %v (%v in all)\n", res.Duration.Round(time.Second), time.Since(start).Round(time.Second))
	ents, err := os.ReadDir(share)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dst := filepath.Join(out, e.Name())
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(share, e.Name()), dst); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "gen: wrote", dst)
	}
	return nil
}
