package md

import (
	"errors"
	"fmt"
)

// This file holds the error model shared by every operation; see the
// package documentation ("Errors").

// ErrRefused is matched by every error for an operation that was refused
// and wrote nothing: a *RefusedError, another replace holding the array's
// lock, and an unsafe run directory (Config.RunDir).
var ErrRefused = errors.New("md: refused")

// RefusedError is a refusal: the operation decided not to go ahead and
// wrote nothing. It matches ErrRefused and unwraps to the specific cause
// (a sentinel such as ErrNoEmptySlot, ErrNoArray or ErrAmbiguous, a
// *NotBlankError, or an error wrapping the kernel's unix.EBUSY), so
// errors.Is and errors.As see through it; the other causes are told
// apart by the message alone.
type RefusedError struct {
	// Op is the operation refused, as the message says it: "replace",
	// "fail", "remove", "run", "heal", "lock", "create", "check",
	// "zero-superblock", "change the bitmap", …
	Op string
	// Array is the array as the caller named it, or its kernel name once
	// resolved.
	Array string
	// Member is the member the caller named (fail, remove, replace), if
	// any.
	Member string
	// Check is the check that failed, for a refusal of replace (a
	// PlanCheck's Name), check or create; empty for other operations.
	Check Check
	// Reason is the planner's explanation. When it is empty the message
	// is Err's, which then says what was refused and why.
	Reason string
	// Err is the cause.
	Err error
}

// Error says what was refused and why; nothing was written.
func (e *RefusedError) Error() string {
	if e.Reason == "" {
		if e.Err == nil {
			return ErrRefused.Error()
		}
		return e.Err.Error()
	}
	return fmt.Sprintf("md: refusing to %s in %s: %s", e.Op, e.Array, e.Reason)
}

// Unwrap returns the cause.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// refuse wraps err, the cause of a refusal of op on array (and member),
// in a *RefusedError, keeping err's message. A nil err stays nil, and an
// error that already matches ErrRefused is returned as it is.
func refuse(op, array, member string, err error) error {
	if err == nil || errors.Is(err, ErrRefused) {
		return err
	}
	return &RefusedError{Op: op, Array: array, Member: member, Err: err}
}

// refuseLookup is refuse for the error of resolve: a name that matches
// no array, or several, is a refusal of the operation; an error reading
// sysfs is not.
func refuseLookup(op, array, member string, err error) error {
	if errors.Is(err, ErrNoArray) || errors.Is(err, ErrAmbiguous) {
		return refuse(op, array, member, err)
	}
	return err
}

// ErrUnknownValue is matched by a problem in a Report (Array.Errs) that is
// a value this package does not know: an array_state, level,
// metadata_version, sync_action or member flag word a newer kernel may
// write, or a raid_disks beyond what the metadata can hold. The report
// then says nothing it cannot stand behind (Array.Readable is false).
var ErrUnknownValue = errors.New("md: unknown value")
