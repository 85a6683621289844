package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
)

// ExamineCmd is `mdctl examine`.
type ExamineCmd struct {
	Devices []string `arg:"" name:"device" help:"Member block devices or image files." type:"path"`
	JSON    bool     `name:"json" help:"Print a JSON array, one object per device (schema in EXAMINE-JSON.md)."`
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
func (c *ExamineCmd) Run(k *kong.Context, zone *time.Location) error {
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
		if c.JSON {
			continue
		}
		if printed && rep.Superblock() != nil {
			fmt.Fprintln(k.Stdout)
		}
		if rep.Superblock() != nil {
			writeText(k.Stdout, rep, zone)
			printed = true
		}
		writeDiagnostics(k.Stderr, rep)
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

func statusMessage(rep *examine.Report) string {
	switch rep.Status {
	case examine.NoSuperblock:
		return "no md superblock found"
	case examine.Damaged:
		return fmt.Sprintf("damaged md superblock: %v", rep.Err)
	}
	return fmt.Sprint(rep.Err)
}
