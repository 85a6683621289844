package superblock

import (
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/google/uuid"
)

// PPL header layout (md_p.h struct ppl_header).
const (
	// PPLHeaderSize is PPL_HEADER_SIZE.
	PPLHeaderSize = 4096
	// PPLMaxEntries is PPL_HDR_MAX_ENTRIES, (4096-512-16-8)/24.
	PPLMaxEntries = (PPLHeaderSize - offPPLSignature - 4*4 - 8) / pplEntrySize

	offPPLSignature  = 512 // after PPL_HDR_RESERVED bytes of 0xff
	offPPLPadding    = 516
	offPPLGeneration = 520
	offPPLEntries    = 528
	offPPLChecksum   = 532
	offPPLEntry0     = 536
	pplEntrySize     = 24
)

// castagnoli returns the CRC-32C table, made on first use: making it
// takes 18 ms of the start-up of every mdctl command under emulation (Go
// precomputes SSE 4.2 combination tables), and only PPL needs it.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// PPLEntry is a struct ppl_header_entry.
type PPLEntry struct {
	DataSector uint64 // raid sector of the new data
	PPSize     uint32 // length of partial parity
	DataSize   uint32 // length of data
	ParityDisk uint32 // member disk containing parity
	Checksum   uint32 // ~crc32c of the partial parity data
}

// PPLHeader is the partial parity log header of a raid5 member.
type PPLHeader struct {
	Signature    uint32
	Padding      uint32
	Generation   uint64
	EntriesCount uint32
	Checksum     uint32
	// Entries holds the first EntriesCount entries.
	Entries []PPLEntry
}

// PPLSignature returns the signature a PPL header of the array must carry:
// ~crc32c(~0, set_uuid), which is the standard CRC-32C of the UUID.
func PPLSignature(setUUID uuid.UUID) uint32 { return crc32.Checksum(setUUID[:], castagnoli()) }

// pplChecksum is ~crc32c(~0, header) with the checksum field taken as zero,
// computed without modifying b.
func pplChecksum(b []byte) uint32 {
	var zero [4]byte
	c := crc32.Update(0, castagnoli(), b[:offPPLChecksum])
	c = crc32.Update(c, castagnoli(), zero[:])
	return crc32.Update(c, castagnoli(), b[offPPLChecksum+4:PPLHeaderSize])
}

// DecodePPL decodes a 4096-byte PPL header. Errors match ErrTruncated,
// ErrOutOfRange (entries_count above PPLMaxEntries), or ErrChecksum (a
// *FormatError returned together with the decoded header).
func DecodePPL(b []byte) (*PPLHeader, error) {
	if len(b) < PPLHeaderSize {
		return nil, formatErr(-1, "ppl header length", len(b), ErrTruncated)
	}
	h := &PPLHeader{
		Signature:    le.Uint32(b[offPPLSignature:]),
		Padding:      le.Uint32(b[offPPLPadding:]),
		Generation:   le.Uint64(b[offPPLGeneration:]),
		EntriesCount: le.Uint32(b[offPPLEntries:]),
		Checksum:     le.Uint32(b[offPPLChecksum:]),
	}
	if h.EntriesCount > PPLMaxEntries {
		return nil, formatErr(offPPLEntries, "entries_count", h.EntriesCount, ErrOutOfRange)
	}
	for i := 0; i < int(h.EntriesCount); i++ {
		e := b[offPPLEntry0+i*pplEntrySize:]
		h.Entries = append(h.Entries, PPLEntry{
			DataSector: le.Uint64(e),
			PPSize:     le.Uint32(e[8:]),
			DataSize:   le.Uint32(e[12:]),
			ParityDisk: le.Uint32(e[16:]),
			Checksum:   le.Uint32(e[20:]),
		})
	}
	if c := pplChecksum(b); c != h.Checksum {
		return h, formatErr(offPPLChecksum, "ppl checksum", fmt.Sprintf("%#08x, computed %#08x", h.Checksum, c), ErrChecksum)
	}
	return h, nil
}

// ReadPPL reads and checks the PPL header of a 1.x superblock, at
// SuperOffset + PPLOffset sectors. Only the first header is read when
// FeatureMultiplePPLs is set. Errors match ErrNoPPL (no PPL feature),
// ErrTruncated, ErrOutOfRange, ErrChecksum, or ErrInvalid (a signature that
// is not PPLSignature(sb.SetUUID)); on checksum and signature errors the
// header is returned as well.
func ReadPPL(r io.ReaderAt, sb *Superblock) (*PPLHeader, error) {
	if !sb.HasPPL() {
		return nil, formatErr(-1, "ppl", "not present", ErrNoPPL)
	}
	off, err := sectorOffset(sb.SuperOffset, int64(sb.PPLOffset()), off1BitmapOffset, "ppl.offset")
	if err != nil {
		return nil, err
	}
	buf := make([]byte, PPLHeaderSize)
	if err := readFull(r, buf, off); err != nil {
		return nil, err
	}
	h, err := DecodePPL(buf)
	if err != nil {
		return h, err
	}
	if want := PPLSignature(sb.SetUUID); h.Signature != want {
		return h, formatErr(offPPLSignature, "ppl signature", h.Signature, fmt.Errorf("%w: want %#08x", ErrInvalid, want))
	}
	return h, nil
}
