package superblock

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package matches exactly one
// of them with errors.Is, except I/O errors from the io.ReaderAt, which are
// wrapped unchanged.
var (
	// ErrNoSuperblock means the bytes do not start with the md magic
	// 0xa92b4efc in either byte order. Probe skips locations with this
	// error; Read and Decode return it.
	ErrNoSuperblock = errors.New("superblock: no md superblock")

	// ErrTruncated means the buffer or device ends before the structure
	// does (for 1.x, before 256 + 2*max_dev bytes).
	ErrTruncated = errors.New("superblock: truncated")

	// ErrChecksum means the stored checksum does not match the bytes.
	// The concrete error is a *ChecksumError, which carries the decoded
	// value.
	ErrChecksum = errors.New("superblock: checksum mismatch")

	// ErrUnsupportedVersion means a major version other than 0 or 1, a
	// 0.90 minor version other than 90 or 91, an unknown bitmap version,
	// or an unknown Version value.
	ErrUnsupportedVersion = errors.New("superblock: unsupported version")

	// ErrUnknownFeature means feature_map has bits outside FeatureAll.
	// The kernel refuses such a member.
	ErrUnknownFeature = errors.New("superblock: unknown feature bits")

	// ErrInvalid means a field holds a value the kernel refuses
	// (data_size < 10, conflicting features, ...).
	ErrInvalid = errors.New("superblock: invalid field")

	// ErrUnknownField means 1.x padding holds non-zero bytes: most
	// likely a field of a kernel newer than this package (see
	// UnknownFields). Such a superblock decodes and validates; only
	// CheckKnown returns this error.
	ErrUnknownField = errors.New("superblock: field unknown to this package (written by a newer kernel?)")

	// ErrOutOfRange means a size, count or offset is absurd or points
	// beyond the device (max_dev > 1920, bad-block log larger than a
	// page, data past the end of the device, ...).
	ErrOutOfRange = errors.New("superblock: value out of range")

	// ErrWrongLocation means a superblock was found where it does not
	// belong: a 1.x superblock whose super_offset is not the sector it
	// was read from, or a superblock of another format at a location.
	// The kernel and blkid refuse such a superblock.
	ErrWrongLocation = errors.New("superblock: superblock at wrong location")

	// ErrDeviceTooSmall means the device cannot hold a superblock of the
	// requested version (0.90 needs 64 KiB, 1.x needs 24 sectors).
	ErrDeviceTooSmall = errors.New("superblock: device too small")

	// ErrNoBitmap means there is no write-intent bitmap: the feature is
	// not set, or the bitmap magic is missing.
	ErrNoBitmap = errors.New("superblock: no bitmap")

	// ErrNoPPL means the superblock has no partial parity log, or the
	// PPL header is not where it points.
	ErrNoPPL = errors.New("superblock: no partial parity log")
)

// FormatError describes one field that failed a check. It unwraps to one of
// the sentinel errors above.
type FormatError struct {
	// Offset is the byte offset of the field from the start of the
	// structure being decoded (superblock, bitmap or PPL header), or -1
	// when the problem is not tied to one field.
	Offset int64
	// Field is the C name of the field, as in md_p.h (e.g. "max_dev").
	Field string
	// Value is the offending value.
	Value any
	// Err is the sentinel error the problem belongs to.
	Err error
}

var _ error = (*FormatError)(nil)

// Error describes the field, its value and the sentinel's message.
func (e *FormatError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: %s = %v at byte %#x", msg, e.Field, e.Value, e.Offset)
	}
	return fmt.Sprintf("%s: %s = %v", msg, e.Field, e.Value)
}

// Unwrap returns the sentinel error.
func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(off int64, field string, value any, err error) *FormatError {
	return &FormatError{Offset: off, Field: field, Value: value, Err: err}
}

// ChecksumError reports a superblock whose stored checksum does not match
// its contents. It matches errors.Is(err, ErrChecksum), and Superblock holds
// everything that was decoded, so a caller can still show the damaged
// superblock (mdadm --examine prints "Checksum : X - expected Y").
type ChecksumError struct {
	Superblock *Superblock
	Stored     uint32
	Computed   uint32
}

var _ error = (*ChecksumError)(nil)

// Error reports the stored and computed checksums.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("superblock: checksum mismatch: stored %#08x, computed %#08x", e.Stored, e.Computed)
}

// Is reports whether target is ErrChecksum.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }
