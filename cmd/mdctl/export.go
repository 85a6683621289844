package main

// The --export outputs: `mdctl examine --export` prints the keys of
// mdadm --examine --export, `mdctl status --export` those of mdadm
// --detail --export (docs/assembly.md §4.1, §4.2), for udev's
// IMPORT{program} and for scripts that eval them.
//
// Every value either is built from numbers (levels, counts, UUIDs,
// times, events) or passes md.UdevSafe; names go through md.SafeName
// (md.ExportName). A value that does not is not printed: the key is left
// out and a warning on stderr says why. mdadm prints such values raw.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
)

// exportHelp is the paragraph both commands' --help add about --export.
const exportHelp = `With --export, the output is KEY=VALUE lines for udev's IMPORT{program}
and shell eval, the keys mdadm prints with --export. Values come from
disks and are never printed raw when udev would misread them: an array
name mdctl will not hand to udev (quotes, '$', '\', control bytes, a
leading '-', ...) is left out (MD_NAME, MD_DEVNAME) with a warning on stderr; one it
rewrites (space or tab to '_', '/' to '-') is printed rewritten; any other
value that is empty, holds a control byte or starts or ends with white
space or starts with a quote is left out with a warning. A key whose fact
is unknown (an unknown level, an unreadable slot) is left out.`

// exportExamine prints the --examine --export keys of every report that
// has a superblock (a damaged one too, as mdadm does: the exit status
// says it is damaged), one block after the other with no separator, as
// mdadm prints them for several devices.
func exportExamine(w, errw io.Writer, reports []*examine.Report) error {
	out := bufio.NewWriter(w)
	for _, rep := range reports {
		sb := rep.Superblock()
		if sb != nil {
			lines, warns := examineExportLines(sb)
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			for _, wmsg := range warns {
				fmt.Fprintf(errw, "mdctl: %s: warning: %s\n", escape.Text(rep.Device), escape.Lines(wmsg))
			}
		}
		writeDiagnostics(errw, rep)
	}
	return out.Flush()
}

// examineExportLines returns the lines of mdadm --examine --export for
// sb (super1.c export_examine_super1, super0.c export_examine_super0 as
// read in mdadm d1447022), and warnings for keys left out.
func examineExportLines(sb *superblock.Superblock) (lines, warns []string) {
	add := func(k, format string, args ...any) { lines = append(lines, k+"="+fmt.Sprintf(format, args...)) }
	if sb.Level.Known() {
		add("MD_LEVEL", "%s", sb.Level)
	} else {
		warns = append(warns, fmt.Sprintf("MD_LEVEL left out: unknown level %d", int32(sb.Level)))
	}
	// mdadm prints raid_disks with %d.
	add("MD_DEVICES", "%d", int32(sb.RaidDisks))
	if sb.Version == superblock.Version090 {
		if sb.MinorVersion >= 90 {
			add("MD_UUID", "%s", mapfile.Groups(sb.SetUUID))
		} else {
			add("MD_UUID", "%x", sb.SetUUID[0:4]) // set_uuid0 only
		}
		// mdadm prints the 0.90 ctime here, not the utime: kept, so
		// that the keys are mdadm's.
		add("MD_UPDATE_TIME", "%d", sb.CTime&(1<<40-1))
		add("MD_EVENTS", "%d", sb.Events)
		return lines, warns
	}
	switch n, ok, err := md.ExportName(sb); {
	case ok:
		add("MD_NAME", "%s", n)
	case err != nil:
		warns = append(warns, fmt.Sprintf("MD_NAME left out: %v", err))
	}
	// mdadm compares the level as unsigned: linear and the other
	// negative levels get here too, and have no data-disk count.
	if sb.Level != 0 {
		if size, ok := sb.ArraySize(); ok && size <= math.MaxInt64 {
			if s := jedec(int64(size)); s != "" {
				add("MD_ARRAY_SIZE", "%s", s)
			}
		}
	}
	add("MD_UUID", "%s", mapfile.Groups(sb.SetUUID))
	add("MD_UPDATE_TIME", "%d", sb.UTime&(1<<40-1))
	add("MD_DEV_UUID", "%s", mapfile.Groups(sb.DeviceUUID))
	add("MD_EVENTS", "%d", sb.Events)
	return lines, warns
}

// jedec is mdadm's human_size_brief(bytes, JEDEC): centi-megabytes below
// 2 GiB, centi-gigabytes below 2 TiB, else centi-terabytes, in powers of
// ten, rounded half up; "" below 5000 KiB (mdadm then prints an empty
// MD_ARRAY_SIZE, which udev drops; here the key is left out).
func jedec(bytes int64) string {
	switch {
	case bytes < 5000*1024:
		return ""
	case bytes < 2<<30:
		c := (bytes/(1000000/200) + 1) / 2
		return fmt.Sprintf("%d.%02dMB", c/100, c%100)
	case bytes < 2<<40:
		c := (bytes/(1000000000/200) + 1) / 2
		return fmt.Sprintf("%d.%02dGB", c/100, c%100)
	}
	c := (bytes/(1000000000000/200) + 1) / 2
	return fmt.Sprintf("%d.%02dTB", c/100, c%100)
}

// detailExportLines returns the lines of mdadm --detail --export for e,
// in mdadm's order (Detail.c); without devices the per-member keys are
// left out (--no-devices).
func detailExportLines(e *md.DetailExport, devices bool) []string {
	var lines []string
	add := func(k, format string, args ...any) { lines = append(lines, k+"="+fmt.Sprintf(format, args...)) }
	if e.Level != "" {
		add("MD_LEVEL", "%s", e.Level)
	}
	add("MD_DEVICES", "%d", e.RaidDisks)
	switch {
	case e.Container != "":
		add("MD_CONTAINER", "%s", e.Container)
		add("MD_MEMBER", "%s", e.Member)
	case e.Metadata != "":
		add("MD_METADATA", "%s", e.Metadata)
	}
	if e.UUID != "" {
		add("MD_UUID", "%s", e.UUID)
	}
	if e.DevName != "" {
		add("MD_DEVNAME", "%s", e.DevName)
	}
	if e.Reshaping != nil {
		v := "False"
		if *e.Reshaping {
			v = "True"
		}
		add("MD_RESHAPE_ACTIVE", "%s", v)
	}
	if e.Name != "" {
		add("MD_NAME", "%s", e.Name)
	}
	if !devices {
		return lines
	}
	for _, m := range e.Members {
		if m.SlotKnown {
			if m.Slot >= 0 {
				add("MD_DEVICE_"+m.Key+"_ROLE", "%d", m.Slot)
			} else {
				add("MD_DEVICE_"+m.Key+"_ROLE", "spare")
			}
		}
		if m.Path != "" {
			add("MD_DEVICE_"+m.Key+"_DEV", "%s", m.Path)
		}
	}
	return lines
}

// exportStatus is status --export ARRAY: it prints the keys and exits 0
// (udev imports nothing from a program that fails), or exits 4 when the
// array cannot be found or read.
func exportStatus(ctx context.Context, k *kong.Context, open openFunc, array string, devices bool) error {
	m, err := open()
	if err != nil {
		return &exitError{code: exitUnreadable, msg: err.Error()}
	}
	e, err := m.Export(ctx, array)
	if err != nil {
		return &exitError{code: exitUnreadable, msg: err.Error()}
	}
	out := bufio.NewWriter(k.Stdout)
	for _, l := range detailExportLines(e, devices) {
		fmt.Fprintln(out, l)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for _, w := range e.Warnings {
		if !devices && isMemberWarning(w) {
			continue
		}
		fmt.Fprintf(k.Stderr, "mdctl: %s: warning: %s\n", e.Device, escape.Lines(w))
	}
	return nil
}

// isMemberWarning reports whether w is about a per-member key, which
// --no-devices does not print.
func isMemberWarning(w string) bool {
	return strings.HasPrefix(w, "MD_DEVICE_") || strings.HasPrefix(w, "members left out")
}
