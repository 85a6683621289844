package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/sysfs"
)

// ExamineCmd is `mdctl examine`.
type ExamineCmd struct {
	Devices []string `arg:"" name:"device" help:"Member block devices or image files." type:"path"`
	JSON    bool     `name:"json" xor:"format" help:"Print a JSON array, one object per device (schema in EXAMINE-JSON.md)."`
	Export  bool     `name:"export" xor:"format" help:"Print the KEY=VALUE lines of mdadm --examine --export (MD_LEVEL, MD_DEVICES, MD_NAME, MD_ARRAY_SIZE, MD_UUID, MD_UPDATE_TIME, MD_DEV_UUID, MD_EVENTS), one block per device."`
}

// exitError is an error with an exit code (for examine, an
// examine.Status).
type exitError struct {
	code int
	msg  string
}

// Error returns the message kong prints.
func (e *exitError) Error() string { return e.msg }

// ExitCode implements kong.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// Run examines every device, prints what it found, and fails with the
// worst status: 1 damaged superblock, 2 no superblock, 3 unreadable.
//
// Times are printed in zone, the local time zone (main binds it).
func (c *ExamineCmd) Run(k *kong.Context, g *Globals, zone *time.Location) error {
	node := devNodes(g.Sysfs, g.Dev)
	worst := examine.OK
	failed := 0
	var reports []*examine.Report
	printed := false
	for _, dev := range c.Devices {
		rep := examine.InspectPath(dev)
		reports = append(reports, rep)
		if rep.Status > worst {
			worst = rep.Status
		}
		if rep.Status != examine.OK {
			failed++
		}
		if c.JSON || c.Export {
			continue
		}
		if printed && rep.Superblock() != nil {
			fmt.Fprintln(k.Stdout)
		}
		if rep.Superblock() != nil {
			writeText(k.Stdout, rep, zone, node)
			printed = true
		}
		writeDiagnostics(k.Stderr, rep)
	}
	if c.Export {
		if err := exportExamine(k.Stdout, k.Stderr, reports); err != nil {
			return err
		}
	}
	if c.JSON {
		out := make([]jsonReport, 0, len(reports))
		for _, rep := range reports {
			out = append(out, toJSON(rep))
		}
		enc := json.NewEncoder(k.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if worst == examine.OK {
		return nil
	}
	if !c.JSON && len(c.Devices) == 1 {
		// writeDiagnostics has said what is wrong, in one line or more:
		// only the exit status is left to give.
		return &quietExit{code: int(worst)}
	}
	if len(c.Devices) == 1 {
		return &exitError{int(worst), fmt.Sprintf("%s: %v", reports[0].Device, statusMessage(reports[0]))}
	}
	return &exitError{int(worst), fmt.Sprintf("%d of %d devices have problems (worst: %v)", failed, len(c.Devices), worst)}
}

// devNodes returns what mdadm's map_dev is to examine's 0.90 device
// table: the device node of the block device major:minor, found through
// sysfs dev/block/MAJ:MIN under sysRoot and shown when devRoot has it,
// or "" when there is none (the device is not on this system, or
// --sysfs is not a sysfs tree).
func devNodes(sysRoot, devRoot string) func(major, minor int32) string {
	fsys, err := sysfs.NewFS(sysRoot)
	if err != nil {
		return func(int32, int32) string { return "" }
	}
	return func(major, minor int32) string {
		if major < 0 || minor < 0 || major == 0 && minor == 0 {
			return ""
		}
		dev := sysfs.DevNum{Major: uint32(major), Minor: uint32(minor)}
		dir, err := fsys.Rel(fsys.Path("dev", "block", dev.String()))
		if err != nil {
			return ""
		}
		name := path.Base(dir)
		if name == "." || name == "/" || name == ".." {
			return ""
		}
		node := filepath.Join(devRoot, name)
		if _, err := os.Lstat(node); err != nil {
			return ""
		}
		return node
	}
}

func statusMessage(rep *examine.Report) string {
	switch rep.Status {
	case examine.NoSuperblock:
		return "no md superblock found"
	case examine.Damaged:
		return fmt.Sprintf("damaged md superblock: %v", rep.Err)
	}
	return fmt.Sprint(rep.Err)
}
