package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsnet/golib/unitconv"
	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// statusExitCode is the worst condition among the arrays: 4 when the
// report or an array's state could not be read, else 2 when an array is
// failed or cannot run (inactive), else 1 when one is degraded, else 0.
func statusExitCode(r *md.Report, readErr error) int {
	if readErr != nil || r == nil {
		return exitUnreadable
	}
	code := exitHealthy
	for _, a := range r.Arrays {
		c := exitHealthy
		switch {
		case !a.Readable():
			c = exitUnreadable
		case a.Availability == md.Failed || a.Availability == md.Inactive:
			c = exitFailed
		case a.Availability == md.Degraded:
			c = exitDegraded
		}
		code = max(code, c)
	}
	return code
}

// humanBytes prints a size the way mdadm does: binary and decimal units.
func humanBytes(n uint64) string {
	return fmt.Sprintf("%s (%s)", byteUnit(float64(n), unitconv.IEC, 2), byteUnit(float64(n), unitconv.SI, 2))
}

// byteUnit formats v bytes as "63.00 MiB" (IEC) or "66.06 MB" (SI).
func byteUnit(v float64, m unitconv.Mode, prec int) string {
	s := unitconv.FormatPrefix(v, m, prec)
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'z' })
	if i < 0 {
		return s + " B"
	}
	return s[:i] + " " + s[i:] + "B"
}

// bar draws a progress bar of width cells for a percentage, like
// /proc/mdstat's [=====>....].
func bar(percent float64, width int) string {
	if percent < 0 {
		percent = 0
	}
	if percent > 100 {
		percent = 100
	}
	done := int(percent / 100 * float64(width))
	if done >= width {
		return "[" + strings.Repeat("=", width) + "]"
	}
	return "[" + strings.Repeat("=", done) + ">" + strings.Repeat(".", width-done-1) + "]"
}

// short is s cut to 64 bytes, saying how long it was: a sysfs value
// can be a page of garbage.
func short(s string) string {
	if len(s) <= 64 {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:64], len(s))
}

// dash is s escaped for text output, or "-" when s is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return escape.Text(s)
}

// renderText writes one block per array: identity, state, a rebuild bar
// while a sync runs, and a slot table.
//
// With color (a terminal, and NO_COLOR unset) the health word is
// coloured: green when online, yellow when degraded or read-only, red
// otherwise.
func renderText(w io.Writer, r *md.Report, color ...bool) error {
	if len(r.Arrays) == 0 {
		_, err := fmt.Fprintln(w, "no md arrays found")
		return err
	}
	for i, a := range r.Arrays {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(color) > 0 && color[0] {
			var b strings.Builder
			renderArray(&b, &a)
			fmt.Fprint(w, colorHealth(b.String(), a.Availability))
			continue
		}
		renderArray(w, &a)
	}
	return nil
}

// colorHealth colours the health word of one array's text block.
func colorHealth(block string, av md.Availability) string {
	word := strings.ToUpper(string(av))
	code := "31" // red
	switch av {
	case md.Online:
		code = "32"
	case md.Degraded, md.ReadOnly:
		code = "33"
	}
	// At a line start: a name in the title line may read "health:"
	// too (escaped, but the words survive).
	return strings.Replace(block, "\n  health: "+word, "\n  health: \x1b["+code+"m"+word+"\x1b[0m", 1)
}

// renderArray prints one array. Every string that comes from a disk
// (names, homehost, serials, errors quoting them) or from sysfs is
// escaped (escape.Text): a name must not forge a line or reach the
// terminal as a control sequence.
func renderArray(w io.Writer, a *md.Array) {
	esc := escape.Text
	title := esc(a.Path)
	if a.Name != "" {
		title += "  (name " + esc(a.Name)
		if a.Homehost != "" {
			title += ", homehost " + esc(a.Homehost)
		}
		title += ")"
	}
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "  level:\t%s\tmetadata %s\tuuid %s\n", dash(short(a.Level)), dash(short(a.Metadata)), dash(a.UUID))
	fmt.Fprintf(tw, "  health:\t%s\tredundancy %s,\tkernel state %s\n", strings.ToUpper(string(a.Availability)), esc(string(a.Redundancy)), dash(short(a.State)))
	size := humanBytes(a.SizeBytes)
	if a.Availability == md.Inactive {
		size = "- (not running)"
	}
	fmt.Fprintf(tw, "  size:\t%s\t%d slots: %d active, %d working, %d failed, %d spare\n",
		size, a.RaidDisks, a.Counts.Active, a.Counts.Working, a.Counts.Failed, a.Counts.Spare)
	tw.Flush()
	act := a.Activity
	switch {
	case act.Pending != "":
		fmt.Fprintln(w, pendingLine(a))
	case act.Kind != sysfs.ActionIdle && act.TotalSectors > 0:
		line := fmt.Sprintf("  %-8s %s %5.1f%% (%s / %s)", esc(short(string(act.Kind)))+":", bar(act.Percent, 20), act.Percent,
			byteUnit(float64(act.DoneSectors*512), unitconv.IEC, 1), byteUnit(float64(act.TotalSectors*512), unitconv.IEC, 1))
		if act.SpeedKiBs > 0 {
			line += fmt.Sprintf("  %s/s  eta %s", byteUnit(float64(act.SpeedKiBs*1024), unitconv.IEC, 1),
				(time.Duration(act.ETASeconds) * time.Second).String())
		}
		fmt.Fprintln(w, line)
	case act.Kind != sysfs.ActionIdle:
		fmt.Fprintf(w, "  activity: %s\n", esc(short(string(act.Kind))))
	}
	if line := syncLine(a); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := bitmapLine(a.Bitmap); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := lastCheckLine(a.LastCheck); line != "" {
		fmt.Fprintln(w, line)
	}
	switch {
	case a.Freeze != nil:
		fmt.Fprintf(w, "  hint: %s\n", a.Freeze.Hint)
	case act.Kind == sysfs.ActionFrozen:
		fmt.Fprintf(w, "  hint: resync and recovery are frozen (sync_action is frozen): nothing is rebuilt until it is set to idle (echo idle > /sys/block/%s/md/sync_action), unless the tool that froze it is still at work\n", esc(a.Device))
	}
	var table strings.Builder
	tw = tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	denied := false
	var unrecorded []string // members showing faulty with bad blocks not yet recorded
	fmt.Fprintln(tw, "  SLOT\tSTATE\tDEVICE\tBY-PATH\tFLAGS\tEVENTS")
	row := func(slot, state string, m *md.Member) {
		if m == nil {
			fmt.Fprintf(tw, "  %s\t%s\t-\t\t\t\n", slot, state)
			return
		}
		ev := "-"
		if m.Events != nil {
			ev = fmt.Sprint(*m.Events)
			if m.Stale {
				ev += " (stale)"
			}
		}
		flags := short(m.Flags.String())
		if m.Flags.BadBlocksPending() {
			unrecorded = append(unrecorded, esc(m.Path))
		}
		switch {
		case permissionDenied(m.Error) && !strings.Contains(m.Error, "; "):
			denied = true // one hint below the table, not one per row
		case m.Error != "":
			flags += " error: " + m.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", slot, esc(state), esc(m.Path), dash(m.ByPath), dash(flags), ev)
	}
	for _, s := range a.Slots {
		if s.Member == nil && s.Recorded != nil {
			// The disk that belongs here, from the store.
			fmt.Fprintf(tw, "  %d\t%s\t(recorded %s)\t%s\t\t\n", s.Slot, esc(string(s.State)), recordedDisk(s.Recorded), dash(s.Recorded.ByPath))
			continue
		}
		row(fmt.Sprint(s.Slot), string(s.State), s.Member)
		if s.Recorded != nil {
			fmt.Fprintf(tw, "  \t\t(recorded %s)\t%s\t\t\n", recordedDisk(s.Recorded), dash(s.Recorded.ByPath))
		}
		if s.Replacement != nil {
			row(fmt.Sprint(s.Slot), "replacement", s.Replacement)
		}
	}
	for i := range a.Spares {
		row("-", "spare", &a.Spares[i])
	}
	for i := range a.Faulty {
		row("-", "faulty", &a.Faulty[i])
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		// Rows of empty slots leave padding behind.
		if line != "" {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
	if len(unrecorded) > 0 {
		fmt.Fprintf(w, "  hint: %s shows faulty beside in_sync or spare: the kernel has bad blocks for it not yet recorded in its bad-block log; that is not a failure\n", strings.Join(unrecorded, ", "))
	}
	if denied {
		fmt.Fprintln(w, "  hint: the members' superblocks (events, names, roles) can only be read as root: run mdctl status as root for them")
	}
	if line := badBlocksLine(a); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := runHint(a); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, e := range a.Errors {
		fmt.Fprintf(w, "  error: %s\n", esc(e))
	}
}

// pendingLine is the line about a sync that has not started: DELAYED
// behind another array on the same disks, or a PENDING resync, with where
// the members stop agreeing and what starts it (mdadm --detail says
// "resyncing (PENDING)" and "(DELAYED)" for the same states).
func pendingLine(a *md.Array) string {
	act := a.Activity
	kind := string(act.Kind)
	if act.Pending == md.PendingResync || kind == string(sysfs.ActionIdle) || kind == string(sysfs.ActionFrozen) {
		kind = "resync"
	}
	line := fmt.Sprintf("  %s: %s", escape.Text(short(kind)), strings.ToUpper(escape.Text(act.Pending)))
	switch rs := act.ResyncStartSectors; {
	case rs == nil:
	case *rs == 0:
		line += ", nothing synced yet"
	default:
		line += fmt.Sprintf(", the members agree up to sector %d only", *rs)
		if total := a.ComponentBytes / 512; total > 0 && *rs <= total {
			line += fmt.Sprintf(" (%.1f%%)", float64(*rs)*100/float64(total))
		}
	}
	switch {
	case act.Pending == md.PendingDelayed:
		line += ": waits for another array on the same disks to finish its sync"
	case a.State == string(sysfs.StateReadAuto):
		line += ": it starts at the first write (the array is auto-read-only)"
	case a.State == string(sysfs.StateReadonly):
		line += ": it starts once the array is writable (it is read-only)"
	case act.Kind == sysfs.ActionFrozen:
		line += ": it starts when sync_action is no longer frozen"
	default:
		line += ": not started"
	}
	return line
}

// badBlocksLine names the members with a bad-block log that is not empty
// (JSON: bad_blocks): md neither reads nor writes those sectors on them,
// so the data there has one copy fewer; "" when none has any.
func badBlocksLine(a *md.Array) string {
	var with []string
	for _, m := range a.Members() {
		if m.BadBlocks > 0 {
			with = append(with, fmt.Sprintf("%s %d", escape.Text(m.Path), m.BadBlocks))
		}
	}
	if len(with) == 0 {
		return ""
	}
	return fmt.Sprintf("  bad blocks: %s range(s) in the bad-block log; md does not use those sectors of that member, so the data there has one copy fewer: watch the count, and replace the disk if it grows",
		strings.Join(with, ", "))
}

// runHint says, for an inactive array, what mdctl run would do and what
// it risks; "" for any other array.
func runHint(a *md.Array) string {
	o := a.Run
	if o == nil {
		return ""
	}
	dev := escape.Text(a.Device)
	if o.Unfinished != "" {
		return "  hint: inactive: assembled, not started, and it serves nothing: " + escape.Text(o.Unfinished)
	}
	if !o.CanRun {
		return fmt.Sprintf("  hint: inactive: assembled, not started, and it serves nothing; with %d of %d slots it cannot serve its data (mdctl run refuses): find the missing members", o.Slots, a.RaidDisks)
	}
	if o.Slots == a.RaidDisks {
		return fmt.Sprintf("  hint: inactive: assembled, not started, and it serves nothing; mdctl run %s starts it with all %d slots (auto-read-only until its first write)", dev, o.Slots)
	}
	return fmt.Sprintf("  hint: inactive: assembled, not started, and it serves nothing; mdctl run %s starts it with %d of %d slots, degraded with redundancy %s (auto-read-only until its first write): a missing member that turns up later is stale and must be added back (rebuilt, or re-added quickly with a write-intent bitmap): start it only when the missing disks will not come in time",
		dev, o.Slots, a.RaidDisks, o.Redundancy)
}

// permissionDenied reports whether a member's read error is EACCES or
// EPERM, as os errors spell them.
func permissionDenied(msg string) bool {
	return strings.HasSuffix(msg, "permission denied") || strings.HasSuffix(msg, "operation not permitted")
}

// lastCheckLine is the line about the stored check results
// (status --store); "" without them.
func lastCheckLine(lc *md.LastCheck) string {
	if lc == nil {
		return ""
	}
	line := "  last completed check: none"
	if !lc.Finished.IsZero() {
		line = fmt.Sprintf("  last completed %s: %s, %d mismatched sectors", escape.Text(string(lc.Action)), lc.Finished.UTC().Format(time.RFC3339), lc.MismatchSectors)
	}
	if lc.PendingAction != "" {
		line += fmt.Sprintf("; unfinished %s resumes at sector %d", escape.Text(string(lc.PendingAction)), lc.CursorSectors)
	}
	return line
}

// syncLine is the line about the last sync and its mismatch count
// (mismatch_cnt), with what a non-zero count means for the level; "" when
// the array has neither attribute (raid0, linear, not running).
func syncLine(a *md.Array) string {
	last := a.LastSyncAction
	if last == "" && a.MismatchSectors == nil {
		return ""
	}
	what := "none since the array started"
	if last != sysfs.ActionIdle && last != "" {
		what = escape.Text(short(string(last)))
	}
	if last == "" {
		what = "-"
	}
	line := "  last sync: " + what
	if a.MismatchSectors == nil {
		return line
	}
	n := *a.MismatchSectors
	switch act := a.Activity.Kind; {
	case act == last && a.Activity.Pending == "" && (act == sysfs.ActionCheck || act == sysfs.ActionRepair || act == sysfs.ActionResync):
		line = fmt.Sprintf("  %s running: %d mismatched sectors so far", escape.Text(short(string(act))), n)
	case last == sysfs.ActionIdle && n == 0:
		return line
	default:
		line += fmt.Sprintf(", %d mismatched sectors", n)
	}
	if n > 0 {
		line += fmt.Sprintf(" (%s)", byteUnit(float64(n*512), unitconv.IEC, 1))
		if m := md.MismatchMeaning(a.Level, last, n); m != "" {
			line += ": " + m
		}
	}
	return line
}

// renderPrometheus writes the report in the Prometheus text format.
func renderPrometheus(w io.Writer, r *md.Report) error { return renderMetrics(w, r, nil) }

// renderMetrics is renderPrometheus; readErr is why no report could be
// taken, and then only the scrape-error series is written. A metric that
// cannot be built is left out and counted in mdraid_collect_errors; the
// error is the writer's.
func renderMetrics(w io.Writer, r *md.Report, readErr error) error {
	return promtext.Write(w, promtext.Collect(r, readErr))
}

// recordedDisk names the disk a slot record remembers: its serial, or
// its device UUID, or its kernel name then.
func recordedDisk(r *md.SlotRecord) string {
	switch {
	case r.Serial != "":
		return "serial " + escape.Text(r.Serial)
	case r.DeviceUUID != "":
		return "device UUID " + escape.Text(r.DeviceUUID)
	case r.Device != "":
		return "was " + escape.Text(r.Device)
	}
	return "disk"
}

// useColor reports whether w is a terminal and NO_COLOR is unset
// (https://no-color.org).
func useColor(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// bitmapLine describes the write-intent bitmap, as mdadm --examine-bitmap
// counts it: "  bitmap: internal at +8 sectors, 64.0 MiB chunks, 3 of
// 1024 dirty (0.3%, read from vda)".
func bitmapLine(b *md.ArrayBitmap) string {
	if b == nil {
		return ""
	}
	kind, dirty := "internal", "dirty"
	if b.Version == superblock.BitmapMajorLockless {
		kind, dirty = "lockless (llbitmap)", "to sync"
	}
	line := fmt.Sprintf("  bitmap: %s at %+d sectors", kind, b.OffsetSectors)
	if b.ChunkBytes > 0 {
		line += fmt.Sprintf(", %s chunks", byteUnit(float64(b.ChunkBytes), unitconv.IEC, 1))
	}
	if b.Dirty != nil {
		pct := 0.0
		if b.Chunks > 0 {
			pct = float64(*b.Dirty) * 100 / float64(b.Chunks)
		}
		line += fmt.Sprintf(", %d of %d %s (%.1f%%, read from %s)", *b.Dirty, b.Chunks, dirty, pct, escape.Text(b.From))
	}
	if l := b.Lockless; l != nil {
		var parts []string
		for _, st := range []struct {
			n    uint64
			name string
		}{{l.Unwritten, "unwritten"}, {l.Clean, "clean"}, {l.Dirty, "dirty"}, {l.NeedSync, "need-sync"}, {l.Syncing, "syncing"},
			{l.NeedSyncUnwritten, "need-sync-unwritten"}, {l.SyncingUnwritten, "syncing-unwritten"}, {l.CleanUnwritten, "clean-unwritten"}, {l.Invalid, "invalid"}} {
			if st.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", st.n, st.name))
			}
		}
		if len(parts) > 0 {
			line += ": " + strings.Join(parts, ", ")
		}
		if l.FirstUse {
			line += " (not yet initialised: the first start sets every chunk)"
		}
	}
	if b.Error != "" {
		line += "; " + escape.Text(b.Error)
	}
	return line
}
