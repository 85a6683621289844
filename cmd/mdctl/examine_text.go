package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsnet/golib/unitconv"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/superblock"
)

// writeText prints the superblock of rep the way mdadm --examine does
// (super1.c examine_super1, super0.c examine_super0). Differences: the
// "(local to host X)" suffix is never printed, human sizes choose their
// unit by magnitude (github.com/dsnet/golib/unitconv), and 0.90 device
// rows name the device that node finds (mdadm's map_dev). Times are in zone, as mdadm prints them
// with ctime() in the local time zone (TZ honoured). Nothing is printed
// when no superblock was decoded.
func writeText(w io.Writer, rep *examine.Report, zone *time.Location, node func(major, minor int32) string) {
	sb := rep.Superblock()
	if sb == nil {
		return
	}
	b, direct := w.(*bytes.Buffer)
	if !direct {
		b = new(bytes.Buffer)
	}
	p := &printer{w: b, zone: zone, node: node}
	p.raw("%s:\n", escape.Text(rep.Device))
	if sb.Version == superblock.Version090 {
		text090(p, rep, sb)
	} else {
		text1(p, rep, sb)
	}
	if !direct {
		w.Write(b.Bytes())
	}
}

type printer struct {
	w    *bytes.Buffer
	zone *time.Location // of the times printed
	// node names the device major:minor, or ""; nil names none.
	node func(major, minor int32) string
}

func (p *printer) raw(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

// line prints "label : value" with the label right-aligned to 15 columns
// (as "%15s"). The value is escaped: names come from the disk.
func (p *printer) line(label, format string, args ...any) {
	for i := utf8.RuneCountInString(label); i < 15; i++ {
		p.w.WriteByte(' ')
	}
	p.w.WriteString(label)
	p.w.WriteString(" : ")
	p.w.WriteString(escape.Text(sprintf(format, args...)))
	p.w.WriteByte('\n')
}

func (p *printer) blank() { p.w.WriteByte('\n') }

// sprintf is fmt.Sprintf, without fmt for the formats examine's lines
// use most: literal text with the verbs %d (of an integer type), %s (of a
// string) and %x (of an unsigned integer type), without flags or widths.
// Anything else, or an argument of any other type (a named type could
// have a String or Format method), goes to fmt.
func sprintf(format string, args ...any) string {
	var buf [96]byte
	b := buf[:0]
	next := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b = append(b, format[i])
			continue
		}
		if i+1 == len(format) || next == len(args) {
			return fmt.Sprintf(format, args...)
		}
		i++
		var ok bool
		b, ok = appendVerb(b, format[i], args[next])
		if !ok {
			return fmt.Sprintf(format, args...)
		}
		next++
	}
	if next != len(args) {
		return fmt.Sprintf(format, args...)
	}
	return string(b)
}

// appendVerb appends arg formatted with verb, as sprintf does, or
// reports false when that is for fmt to do.
func appendVerb(b []byte, verb byte, arg any) ([]byte, bool) {
	switch verb {
	case 's':
		if s, ok := arg.(string); ok {
			return append(b, s...), true
		}
	case 'd':
		switch v := arg.(type) {
		case int:
			return strconv.AppendInt(b, int64(v), 10), true
		case int32:
			return strconv.AppendInt(b, int64(v), 10), true
		case int64:
			return strconv.AppendInt(b, v, 10), true
		case uint32:
			return strconv.AppendUint(b, uint64(v), 10), true
		case uint64:
			return strconv.AppendUint(b, v, 10), true
		}
	case 'x':
		switch v := arg.(type) {
		case uint32:
			return strconv.AppendUint(b, uint64(v), 16), true
		case uint64:
			return strconv.AppendUint(b, v, 16), true
		}
	}
	return b, false
}

// ctime formats t in zone like C's ctime() without the newline, as mdadm
// prints it ("%.24s" of ctime(), which uses the local time zone).
func ctime(t time.Time, zone *time.Location) string {
	return t.In(zone).Format("Mon Jan _2 15:04:05 2006")
}

// human renders a byte count like mdadm's human_size, " (62.00 MiB 65.01
// MB)", or "" below 5000 KiB.
func human(bytes uint64) string {
	if bytes < 5000*1024 {
		return ""
	}
	v := float64(bytes)
	return " (" + unit(unitconv.FormatPrefix(v, unitconv.IEC, 2)) + " " + unit(unitconv.FormatPrefix(v, unitconv.SI, 2)) + ")"
}

// unit turns unitconv's "62.00Mi" into "62.00 MiB".
func unit(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		return s + " B"
	}
	return s[:i] + " " + s[i:] + "B"
}

// mdadmUUID prints a UUID as mdadm does: four groups of 8 hex digits.
func mdadmUUID(u uuid.UUID) string {
	var b [35]byte
	for i, j := 0, 0; i < 16; i += 4 {
		if i > 0 {
			b[j] = ':'
			j++
		}
		hex.Encode(b[j:], u[i:i+4])
		j += 8
	}
	return string(b[:])
}

func levelName(l superblock.Level) string {
	if !l.Known() {
		return "-unknown-"
	}
	return l.String()
}

func text1(p *printer, rep *examine.Report, sb *superblock.Superblock) {
	f := sb.Features
	p.line("Magic", "%08x", superblock.Magic)
	p.line("Version", "%v", sb.Version)
	p.line("Feature Map", "0x%x", uint32(f))
	p.line("Array UUID", "%s", mdadmUUID(sb.SetUUID))
	p.line("Name", "%s", sb.FullName())
	if rep.Bitmap != nil && rep.BitmapErr == nil && rep.Bitmap.Nodes > 0 && f&superblock.FeatureBitmapOffset != 0 {
		p.line("Cluster Name", "%s", strings.TrimRight(string(rep.Bitmap.ClusterName[:]), "\x00"))
	}
	p.line("Creation Time", "%s", ctime(sb.Created(), p.zone))
	p.line("Raid Level", "%s", levelName(sb.Level))
	p.line("Raid Devices", "%d", int32(sb.RaidDisks))
	p.blank()
	p.line("Avail Dev Size", "%d sectors%s", sb.DataSize, human(sb.DataSize<<9))
	// mdadm tests __le32_to_cpu(level) > 0, an unsigned comparison, so
	// linear, multipath and faulty (negative levels) also get here.
	if sb.Level != 0 {
		if size, ok := sb.ArraySize(); ok {
			p.line("Array Size", "%d KiB%s", size>>10, human(size))
		}
		if sb.Size != sb.DataSize {
			p.line("Used Dev Size", "%d sectors%s", sb.Size, human(sb.Size<<9))
		}
	}
	if sb.DataOffset != 0 {
		p.line("Data Offset", "%d sectors", sb.DataOffset)
	}
	if sb.NewOffset != 0 && f&superblock.FeatureNewOffset != 0 {
		p.line("New Offset", "%d sectors", sb.DataOffset+uint64(int64(sb.NewOffset)))
	}
	p.line("Super Offset", "%d sectors", sb.SuperOffset)
	// Not in mdadm 4.2, which does not know the field (Linux 6.19+).
	if sb.LogicalBlockSize != 0 {
		p.line("Logical Block", "%d bytes", sb.LogicalBlockSize)
	}
	if f&superblock.FeatureRecoveryOffset != 0 {
		p.line("Recovery Offset", "%d sectors", sb.RecoveryOffset)
	}
	before, after := sb.UnusedSpace(rep.Size, bitmapFor(rep))
	if after != 1 && f&superblock.FeatureNewOffset == 0 {
		if after <= math.MaxInt64 {
			p.line("Unused Space", "before=%d sectors, after=%d sectors", before, after)
		} else {
			p.line("Unused Space", "before=%d sectors, after=-%d sectors DEVICE TOO SMALL", before, math.MaxUint64-after)
		}
	}
	truncated := ""
	if after > math.MaxInt64 {
		truncated = " TRUNCATED DEVICE"
	}
	p.line("State", "%s%s", sb.StateText(), truncated)
	p.line("Device UUID", "%s", mdadmUUID(sb.DeviceUUID))
	p.blank()
	if f&superblock.FeatureBitmapOffset != 0 {
		p.line("Internal Bitmap", "%d sectors from superblock", sb.BitmapOffset)
		if line := llBitmapText(rep); line != "" {
			p.line("Lockless Bitmap", "%s", line)
		}
	} else if sb.HasPPL() {
		p.line("PPL", "%d sectors at offset %d sectors from superblock", sb.PPLSize(), sb.PPLOffset())
	}
	if sb.Reshaping() {
		p.line("Reshape pos'n", "%d%s", sb.ReshapePosition/2, human(sb.ReshapePosition<<9))
		if sb.DeltaDisks != 0 {
			p.line("Delta Devices", "%d (%d->%d)", sb.DeltaDisks, int32(sb.RaidDisks)-sb.DeltaDisks, int32(sb.RaidDisks))
		}
		if sb.NewLevel != sb.Level {
			p.line("New Level", "%s", levelName(sb.NewLevel))
		}
		if sb.NewLayout != sb.Layout {
			switch sb.Level {
			case superblock.LevelRAID5, superblock.LevelRAID6, superblock.LevelRAID10:
				p.line("New Layout", "%s", superblock.LayoutName(sb.Level, sb.NewLayout))
			}
		}
		if sb.NewChunk != sb.ChunkSize {
			p.line("New Chunksize", "%dK", sb.NewChunk/1024)
		}
		p.blank()
	}
	if sb.DevFlags != 0 {
		p.line("Flags", "%s", sb.DevFlags)
	}
	p.line("Update Time", "%s", ctime(sb.Updated(), p.zone))
	if sb.BBLogSize != 0 && sb.BBLogOffset != 0 {
		present := ""
		if f&superblock.FeatureBadBlocks != 0 {
			present = " - bad blocks present."
		}
		p.line("Bad Block Log", "%d entries available at offset %d sectors%s", int(sb.BBLogSize)*512/8, sb.BBLogOffset, present)
	}
	checksumLine(p, sb)
	p.line("Events", "%d", sb.Events)
	p.blank()
	layoutAndChunk(p, sb)
	p.blank()
	p.raw("%14s : %s\n", "Device Role", sb.RoleText())
	state, consistent := sb.ArrayState()
	p.raw("%14s : %s ('A' == active, '.' == missing, 'R' == replacing)\n", "Array State", state)
	if !consistent {
		p.raw("WARNING Array state is inconsistent - each number should appear only once\n")
		var b strings.Builder
		for d, r := range sb.DevRoles {
			if r >= superblock.RoleFaulty {
				fmt.Fprintf(&b, " %d:-", d)
			} else {
				fmt.Fprintf(&b, " %d:%d", d, r)
			}
		}
		p.raw("%s\n", b.String())
	}
}

// llBitmapText says what the chunks of a lockless bitmap hold: "10
// chunks of 64 KiB: 1 unwritten, 2 clean, 1 dirty" (the states found), or
// why they were not read; "" for any other bitmap. mdadm 4.5 prints
// nothing of them.
func llBitmapText(rep *examine.Report) string {
	bm := bitmapFor(rep)
	if bm == nil || bm.Version != superblock.BitmapMajorLockless {
		return ""
	}
	if rep.LLBitmapErr != nil {
		return "chunk states not read: " + escape.Text(rep.LLBitmapErr.Error())
	}
	if rep.LLBitmap == nil {
		return ""
	}
	chunks, chunkBytes, _ := bm.LLChunks()
	var parts []string
	for s, n := range rep.LLBitmap.ByState {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, superblock.LLBitmapState(s)))
		}
	}
	if rep.LLBitmap.Invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d invalid", rep.LLBitmap.Invalid))
	}
	first := ""
	if bm.State&superblock.BitmapFirstUse != 0 {
		first = " (not yet initialised: the first start sets every chunk)"
	}
	return fmt.Sprintf("%d chunks of %s: %s%s", chunks, byteUnit(float64(chunkBytes), unitconv.IEC, 0), strings.Join(parts, ", "), first)
}

// bitmapFor returns the bitmap when it is valid, as mdadm only uses a
// bitmap whose magic and UUID match.
func bitmapFor(rep *examine.Report) *superblock.Bitmap {
	if rep.BitmapErr != nil {
		return nil
	}
	return rep.Bitmap
}

func checksumLine(p *printer, sb *superblock.Superblock) {
	if c := sb.ComputedChecksum(); c == sb.Checksum {
		p.line("Checksum", "%x - correct", sb.Checksum)
	} else {
		p.line("Checksum", "%x - expected %x", sb.Checksum, c)
	}
}

func layoutAndChunk(p *printer, sb *superblock.Superblock) {
	if name := sb.LayoutName(); name != "" {
		p.line("Layout", "%s", name)
	}
	switch sb.Level {
	case superblock.LevelRAID0, superblock.LevelRAID4, superblock.LevelRAID5, superblock.LevelRAID6, superblock.LevelRAID10:
		p.line("Chunk Size", "%dK", sb.ChunkSize/1024)
	case superblock.LevelLinear:
		p.line("Rounding", "%dK", sb.ChunkSize/1024)
	}
}

func text090(p *printer, rep *examine.Report, sb *superblock.Superblock) {
	p.line("Magic", "%08x", superblock.Magic)
	p.line("Version", "0.%02d.%02d", sb.MinorVersion, sb.PatchVersion)
	p.line("UUID", "%s", mdadmUUID(sb.SetUUID))
	if sb.NotPersistent != 0 {
		p.line("Eedk", "not persistent")
	}
	p.line("Creation Time", "%s", ctime(sb.Created(), p.zone))
	p.line("Raid Level", "%s", levelName(sb.Level))
	if sb.Level > 0 {
		p.line("Used Dev Size", "%d%s", int32(sb.Size/2), human(sb.Size<<9))
		if size, ok := sb.ArraySize(); ok {
			p.line("Array Size", "%d%s", size>>10, human(size))
		}
	}
	p.line("Raid Devices", "%d", int32(sb.RaidDisks))
	p.line("Total Devices", "%d", int32(sb.NrDisks))
	p.line("Preferred Minor", "%d", int32(sb.MDMinor))
	p.blank()
	deltaExtra := int64(0)
	if sb.Reshaping() {
		p.line("Reshape pos'n", "%d%s", sb.ReshapePosition/2, human(sb.ReshapePosition<<9))
		if sb.DeltaDisks != 0 {
			p.line("Delta Devices", "%d (%d->%d)", sb.DeltaDisks, int32(sb.RaidDisks)-sb.DeltaDisks, int32(sb.RaidDisks))
			if sb.DeltaDisks < 0 {
				deltaExtra = -int64(sb.DeltaDisks)
			}
		}
		if sb.NewLevel != sb.Level {
			p.line("New Level", "%s", levelName(sb.NewLevel))
		}
		if sb.NewLayout != sb.Layout {
			switch sb.Level {
			case superblock.LevelRAID5, superblock.LevelRAID6:
				p.line("New Layout", "%s", superblock.LayoutName(sb.Level, sb.NewLayout))
			case superblock.LevelRAID10:
				kind := "far"
				if sb.NewLayout&0x10000 != 0 {
					kind = "offset"
				}
				p.line("New Layout", "near=%d, %s=%d", sb.NewLayout&255, kind, sb.NewLayout>>8&255)
			}
		}
		if sb.NewChunk != sb.ChunkSize {
			p.line("New Chunksize", "%d", sb.NewChunk)
		}
		p.blank()
	}
	p.line("Update Time", "%s", ctime(sb.Updated(), p.zone))
	p.line("State", "%s", sb.StateText())
	if sb.State&superblock.ArrayBitmapPresent != 0 {
		p.line("Internal Bitmap", "present")
	}
	p.line("Active Devices", "%d", int32(sb.ActiveDisks))
	p.line("Working Devices", "%d", int32(sb.WorkingDisks))
	p.line("Failed Devices", "%d", int32(sb.FailedDisks))
	p.line("Spare Devices", "%d", int32(sb.SpareDisks))
	checksumLine(p, sb)
	p.line("Events", "%d", sb.Events)
	p.blank()
	layoutAndChunk(p, sb)
	p.blank()
	p.raw("      Number   Major   Minor   RaidDevice State\n")
	rows := int64(int32(sb.RaidDisks)) + deltaExtra + int64(int32(sb.SpareDisks))
	rows = min(max(rows, 0), superblock.Disks090)
	for d := int64(-1); d < rows; d++ {
		dp, name := sb.ThisDisk, "this"
		if d >= 0 {
			dp, name = sb.Disks[d], fmt.Sprintf("%4d", d)
		}
		p.raw("%4s %5d   %5d    %5d    %5d     ", name, int32(dp.Number), int32(dp.Major), int32(dp.Minor), int32(dp.RaidDisk))
		p.raw(" %s", strings.Join(dp.State.Words(), " "))
		if p.node != nil {
			if n := p.node(int32(dp.Major), int32(dp.Minor)); n != "" {
				p.raw("   %s", escape.Text(n))
			}
		}
		p.raw("\n")
		if d == -1 {
			p.blank()
		}
	}
}

// writeDiagnostics prints, on stderr, why a device is not OK, the kernel
// checks it fails, and the other superblocks found on it.
func writeDiagnostics(w io.Writer, rep *examine.Report) {
	switch rep.Status {
	case examine.NoSuperblock:
		diag(w, "mdctl: %s: no md superblock detected\n", rep.Device)
	case examine.Unreadable:
		if errors.Is(rep.Err, examine.ErrNotDevice) {
			diag(w, "mdctl: %s: %v\n", rep.Device, rep.Err)
			break
		}
		diag(w, "mdctl: %s: cannot read: %v\n", rep.Device, rep.Err)
	}
	if rep.Candidate != nil && rep.Candidate.Err != nil && !errors.Is(rep.Candidate.Err, superblock.ErrChecksum) {
		diag(w, "mdctl: %s: %v\n", rep.Device, rep.Candidate.Err)
	}
	if rep.Candidate != nil && errors.Is(rep.Candidate.Err, superblock.ErrChecksum) {
		diag(w, "mdctl: %s: superblock checksum is wrong\n", rep.Device)
	}
	for _, p := range rep.Problems {
		diag(w, "mdctl: %s: the kernel would refuse this superblock: %v\n", rep.Device, p)
	}
	for _, e := range warnings(rep) {
		diag(w, "mdctl: %s: warning: %s\n", rep.Device, e)
	}
	for _, n := range notes(rep) {
		diag(w, "mdctl: %s: note: %s\n", rep.Device, n)
	}
	if rep.Candidate != nil {
		for _, c := range rep.Stale() {
			msg := "valid"
			if c.Err != nil {
				msg = c.Err.Error()
			}
			diag(w, "mdctl: %s: note: another %v superblock at byte %d (%s)\n", rep.Device, c.Version, c.Offset, msg)
		}
	}
}

// warnings returns what examine warns about: structures the superblock
// points to that could not be read, and fields of a newer kernel.
func warnings(rep *examine.Report) []string {
	var out []string
	for _, e := range []error{rep.BitmapErr, rep.BadBlocksErr, rep.PPLErr} {
		if e != nil {
			out = append(out, e.Error())
		}
	}
	if sb := rep.Superblock(); sb != nil && sb.Version.Is1x() && sb.LogicalBlockSize != 0 && !superblock.ValidLogicalBlockSize(sb.LogicalBlockSize) {
		out = append(out, fmt.Sprintf("logical_block_size %d is not a power of two from 512 to 65536: Linux 6.19 and later import this superblock, but refuse to run the array if that is larger than its members' block size", sb.LogicalBlockSize))
	}
	if len(rep.Unknown) > 0 {
		words := make([]string, len(rep.Unknown))
		for i, f := range rep.Unknown {
			words[i] = f.String()
		}
		out = append(out, "written by a kernel newer than mdctl: padding holds a field mdctl does not know ("+
			strings.Join(words, ", ")+"); kernels that do not know it refuse to import this superblock, and mdctl will not copy it to a new member")
	}
	return out
}

// notes returns what examine points out about a healthy superblock.
func notes(rep *examine.Report) []string {
	sb := rep.Superblock()
	if sb == nil || !sb.Version.Is1x() || sb.LogicalBlockSize == 0 {
		return nil
	}
	return []string{fmt.Sprintf("logical_block_size is recorded (%d bytes, written by Linux 6.19 or later): kernels before 6.19 refuse to import this superblock (\"does not have a valid v%s superblock, not importing!\")", sb.LogicalBlockSize, sb.Version)}
}

// diag prints one diagnostic line, escaped: errors can quote the disk.
func diag(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, escape.Text(strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")))
}
