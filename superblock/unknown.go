package superblock

import "fmt"

// UnknownField is a word of 1.x padding that holds non-zero bytes. The
// kernel zeroes padding when it writes a superblock, so such a word is most
// likely a field added by a kernel newer than this package, as
// logical_block_size was added to pad3 in Linux 6.19. Kernels that do not
// know the field refuse to import the superblock; what the field means, and
// whether it may be copied to another member, is unknown.
type UnknownField struct {
	// Name is the C name of the padding in md_p.h: "pad0" or "pad3".
	Name string
	// Offset is the byte offset of the word from the start of the
	// superblock.
	Offset int64
	// Value is the little-endian 32-bit word at Offset.
	Value uint32
}

// String describes the field as "pad3 word at byte 0xe8 = 0x2".
func (f UnknownField) String() string {
	return fmt.Sprintf("%s word at byte %#x = %#x", f.Name, f.Offset, f.Value)
}

// UnknownFields returns, in offset order, the words of 1.x padding that are
// not zero: pad0 (byte 12) and the 28 bytes of pad3 after
// logical_block_size (bytes 228..255). It returns nil when there are none,
// and always for 0.90, whose reserved words the kernel neither checks nor
// uses (they are kept in Reserved090).
//
// Decode and Validate accept such a superblock: it is not damaged, it was
// written by a newer kernel. A caller that copies a superblock to another
// device should refuse while this is non-empty (see CheckKnown).
func (sb *Superblock) UnknownFields() []UnknownField {
	if !sb.Version.Is1x() {
		return nil
	}
	var out []UnknownField
	if sb.Pad0 != 0 {
		out = append(out, UnknownField{Name: "pad0", Offset: off1Pad0, Value: sb.Pad0})
	}
	for i := 0; i+4 <= len(sb.Pad3); i += 4 {
		if v := le.Uint32(sb.Pad3[i:]); v != 0 {
			out = append(out, UnknownField{Name: "pad3", Offset: off1Pad3 + int64(i), Value: v})
		}
	}
	return out
}

// CheckKnown returns nil when UnknownFields is empty, else an errors.Join
// of one *FormatError per unknown field, each matching ErrUnknownField and
// naming the padding, its offset and its value.
func (sb *Superblock) CheckKnown() error {
	var errs []error
	for _, f := range sb.UnknownFields() {
		errs = append(errs, formatErr(f.Offset, f.Name, fmt.Sprintf("%#x", f.Value), ErrUnknownField))
	}
	return joinErrs(errs)
}
