package main

import (
	"fmt"
	"strings"
)

// Exit codes. Their meaning per command is exitTable, the one source of
// the table each command's --help shows and the README prints (a test
// pins the README's copy to it).
const (
	exitOK      = 0
	exitFailure = 1 // could not read the system
	exitRefused = 2 // refused: nothing was written
	exitPartial = 3 // failed after changing something: see the message

	// Exit codes of mdctl status, as mdadm --detail --test defines them.
	exitHealthy    = 0
	exitDegraded   = 1
	exitFailed     = 2
	exitUnreadable = 4

	// exitMismatches is the exit code of a check that found mismatches.
	exitMismatches = 1

	// exitUsage is the exit code of a command line that does not parse
	// (an unknown command or flag, a bad value, a missing argument) or
	// whose flags contradict each other, for every command: kong's own
	// code, distinct from every answer above.
	exitUsage = 80
)

// exitRow is what one exit code means for the commands of an exitGroup.
type exitRow struct {
	code    int
	meaning string
}

// exitGroup is the exit codes shared by some commands.
type exitGroup struct {
	commands []string
	rows     []exitRow
}

// noSuchArray is how every command that names an array treats a name
// that matches no array (or several): for the commands that change
// something it is a refusal, nothing written.
const noSuchArray = "no such array (or a name matching several, or one that cannot be checked: not root)"

// exitTable is every command's exit codes, in the order the README lists
// them. The usage error (exitUsage) applies to every command and is the
// table's last line.
var exitTable = []exitGroup{
	{[]string{"status"}, []exitRow{
		{exitHealthy, "every array is healthy (and always with --format=prometheus once metrics are printed, and with --export once the keys are printed)"},
		{exitDegraded, "an array is degraded"},
		{exitFailed, "an array is failed or inactive"},
		{exitUnreadable, "the status could not be read: " + noSuchArray + ", or an attribute of an array (its state, level, a count, a member flag) that is unreadable or a value the kernel does not write"},
	}},
	{[]string{"examine"}, []exitRow{
		{0, "every device has a valid superblock"},
		{1, "a superblock is damaged (checksum, location, values the kernel refuses)"},
		{2, "a device has no md superblock"},
		{3, "a device could not be opened or read"},
	}},
	{[]string{"replace", "fail", "remove", "run", "re-add", "set", "bitmap", "grow"}, []exitRow{
		{exitOK, "done, already so, or the dry run's checks passed"},
		{exitFailure, "the system could not be read"},
		{exitRefused, "refused, nothing written: " + noSuchArray + ", a planner refusal, a held lock, an unsafe run directory"},
		{exitPartial, "failed after changing something: the message says exactly what"},
	}},
	{[]string{"create"}, []exitRow{
		{exitOK, "created and started, or the dry run's checks passed"},
		{exitFailure, "the system could not be read"},
		{exitRefused, "refused, nothing written to any device and no md device made: a device not blank, in use (named), too small, of another block size, an array name taken, a held lock"},
		{exitPartial, "failed after writing a superblock: the message says which devices were written and what was left"},
	}},
	{[]string{"zero-superblock"}, []exitRow{
		{exitOK, "erased on every device named, or the dry run's checks passed"},
		{exitFailure, "failed, nothing written to the device named in the message (devices erased before it are named)"},
		{exitRefused, "refused, nothing written to any device: no md superblock, a damaged one, a member of an array or in use (named), something beside the array's data on the disk, metadata areas that overlap the data, a device that changed before the write"},
		{exitPartial, "failed while writing a device: the message says which devices were erased and which may be partly erased"},
	}},
	{[]string{"stop"}, []exitRow{
		{exitOK, "stopped (every array named), or the dry run's checks passed"},
		{exitFailure, "failed, nothing changed: the system could not be read, or the kernel did not stop the array"},
		{exitRefused, "refused, nothing written: " + noSuchArray + ", mounted, held by another device, used as swap, open by a process (each named), still busy after 5 s of retries, external metadata, a held lock"},
		{exitPartial, "stopped, but a /dev/md link or the map file entry could not be removed: the message says which"},
	}},
	{[]string{"record"}, []exitRow{
		{exitOK, "recorded and saved"},
		{exitFailure, "the system could not be read or the store not saved"},
		{exitRefused, "refused: the store exists but cannot be trusted (not overwritten), a named array was not recorded (" + noSuchArray + ", not healthy), or nothing was recorded (no array, or none healthy)"},
	}},
	{[]string{"heal"}, []exitRow{
		{exitOK, "the pass ran and refused nothing (healed, would heal, or nothing to do, also when no store has been recorded yet)"},
		{exitFailure, "the system could not be read"},
		{exitRefused, "refused: the records cannot be trusted, " + noSuchArray + ", or a slot was refused (nothing written to it; each line says what was done)"},
		{exitPartial, "adding a disk failed"},
	}},
	{[]string{"check"}, []exitRow{
		{exitOK, "checked without mismatches, a repair completed, started (without --wait/--duration), the dry run's checks passed, or nothing to continue; with --all, arrays skipped because there is nothing to check now (no redundancy, not running, read-only, degraded, a sync running), each named with why"},
		{exitMismatches, "a check found mismatches"},
		{exitRefused, "refused, nothing written: " + noSuchArray + ", a named array that cannot be checked, with --all an array that should be checkable and is not (facts unreadable, recovery frozen, sync_max set), an untrusted store"},
		{exitPartial, "failed"},
	}},
	{[]string{"incremental"}, []exitRow{
		{exitOK, "the device was added (MD_STARTED, or the line, says whether its array started)"},
		{exitFailure, "the system could not be read"},
		{exitRefused, "refused, nothing changed: no usable superblock, the device is in use, it disagrees with its array's members, an out-of-date member of a running array (without --run), a spare of a running array (without --add-spares), a reshape, clustered or lockless-bitmap array"},
		{exitPartial, "failed after changing something: the message lists every change"},
	}},
	{[]string{"assemble"}, []exitRow{
		{exitOK, "every array found is assembled: started, or waiting for members (each line says which)"},
		{exitFailure, "the system could not be read"},
		{exitRefused, "a device was refused, or an array left unassembled because two devices claim one slot (each is named; the other arrays are assembled), or no device of the named array was found"},
		{exitPartial, "a device or an array failed (the kernel refused a device, an array did not start; each named on its own line with every change made and undone; every other array is assembled), or assembly stopped after changing something: the message lists every change"},
	}},
	{[]string{"wait"}, []exitRow{
		{exitOK, "what ran on every array has finished (each line says what it waited for), with --scan also when nothing ran; with --clean, every array is clean (made so, already so, or external metadata left to mdmon), or the dry run planned"},
		{exitWaitNothing, "nothing ran on a named array, or it stayed frozen (mdadm -W's failure: it did not wait)"},
		{exitWaitNoArray, noSuchArray},
		{exitWaitFailed, "an array's attributes could not be read or polled; with --clean, a write failed (the message says exactly what was changed)"},
		{exitWaitTimeout, "the timeout passed with a sync still running (each line says which and how far); with --clean, writes kept an array active (safe_mode_delay written back)"},
	}},
	{[]string{"watch"}, []exitRow{
		{exitOK, "stopped by SIGINT or SIGTERM; with --test, every output took every test event"},
		{exitFailure, "the system could not be read or watched; with --test, an output failed"},
	}},
}

// usageRow is the usage error's line, the same for every command.
var usageRow = exitRow{exitUsage, "usage error: the command line does not parse, or its flags contradict each other"}

// exitCodesOf is the rows of command (nil for a command without its own).
func exitCodesOf(command string) []exitRow {
	for _, g := range exitTable {
		for _, c := range g.commands {
			if c == command {
				return g.rows
			}
		}
	}
	return nil
}

// exitHelp is the exit-code paragraph of command's --help.
func exitHelp(command string) string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, r := range append(exitCodesOf(command), usageRow) {
		fmt.Fprintf(&b, "  %-3d %s\n", r.code, r.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// exitMarkdown is the README's exit-code table.
func exitMarkdown() string {
	var b strings.Builder
	b.WriteString("| Command | Code | Meaning |\n|---|---|---|\n")
	for _, g := range exitTable {
		names := make([]string, len(g.commands))
		for i, c := range g.commands {
			names[i] = "`" + c + "`"
		}
		for i, r := range g.rows {
			cmd := ""
			if i == 0 {
				cmd = strings.Join(names, ", ")
			}
			fmt.Fprintf(&b, "| %s | %d | %s |\n", cmd, r.code, r.meaning)
		}
	}
	fmt.Fprintf(&b, "| every command | %d | %s |\n", usageRow.code, usageRow.meaning)
	return b.String()
}

// Help is the command's exit codes, shown by --help.
func (c *StatusCmd) Help() string { return exportHelp + "\n\n" + exitHelp("status") }

// Help is the command's exit codes, shown by --help.
func (c *ExamineCmd) Help() string { return exportHelp + "\n\n" + exitHelp("examine") }

// Help is the command's exit codes, shown by --help.
func (c *ReplaceCmd) Help() string { return exitHelp("replace") }

// Help is the command's exit codes, shown by --help.
func (c *FailCmd) Help() string { return exitHelp("fail") }

// Help is the command's exit codes, shown by --help.
func (c *RemoveCmd) Help() string { return exitHelp("remove") }

// Help is the command's exit codes, shown by --help.
func (c *RunCmd) Help() string { return exitHelp("run") }

// Help is the command's exit codes, shown by --help.
func (c *RecordCmd) Help() string { return exitHelp("record") }

// Help is the command's exit codes, shown by --help.
func (c *HealCmd) Help() string { return exitHelp("heal") }

// Help is the command's exit codes, shown by --help.
func (c *WatchCmd) Help() string { return exitHelp("watch") }
