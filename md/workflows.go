package md

// This file holds the workflows a program built on md runs as a whole,
// so that mdctl and md/watch run the same one: a report of named arrays,
// and a recording pass.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/go-mdraid/mdraid/internal/escape"
)

// DiscoverNames reports the named arrays, in the order given (a name
// given twice is reported twice), each named as in the package
// documentation ("Naming arrays"). With no names it is Discover. A name
// that matches no array (ErrNoArray) or several (ErrAmbiguous) is left
// out of the report and its error returned beside it (errors.Join of
// one per such name, in order), as mdadm --detail reports the arrays it
// found and names the others. It fails, reporting nothing, when the list
// of arrays cannot be read or ctx is done; a problem with one array's
// state is in that entry's Errors, as for Discover.
func (m *Manager) DiscoverNames(ctx context.Context, names ...string) (*Report, error) {
	if len(names) == 0 {
		return m.Discover(ctx)
	}
	r := &Report{Version: SchemaVersion, Time: m.now().UTC(), Arrays: []Array{}}
	fsys := m.fs.WithCache() // one pass, as Discover
	var missing []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		kname, err := m.resolve(name)
		if errors.Is(err, ErrNoArray) || errors.Is(err, ErrAmbiguous) {
			missing = append(missing, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		r.Arrays = append(r.Arrays, m.status(fsys, kname))
	}
	return r, errors.Join(missing...)
}

// Readable reports whether everything the report says about the array
// could be read and understood. When the state could not be read at all
// (the array vanished, or array_state did not answer), State is empty,
// Errors says why, and Availability (Inactive then) says nothing about
// the array: a caller must not take it for stopped.
//
// It is false as well when an attribute could not be read or holds a
// value the kernel does not write (an unknown array_state, level,
// sync_action or member flag, a raid_disks or mismatch_cnt that is not a
// number: each is in Errors), and when the state says nothing this
// package can classify (Availability Unknown). The rest of the report is
// filled in as far as it goes. A member whose superblock cannot be read
// (a missing disk, no permission) is not an array error: its
// Member.Error says so.
func (a *Array) Readable() bool {
	return len(a.Errors) == 0 && a.Availability != Unknown
}

// RecordOptions configures Manager.Record.
type RecordOptions struct {
	// Store keeps the slot records; required.
	Store Store
	// Arrays limits the pass to the named arrays, named as in the package documentation ("Naming arrays");
	// empty for every array.
	Arrays []string
	// Refresh is how old a record whose ports and disks are unchanged
	// must be before it is saved again with new LastHealthy times; zero
	// saves it on every pass.
	Refresh time.Duration

	// Report, when set, is the snapshot to record from, as Discover
	// returned it; by default Record takes one. A watcher that has just
	// taken a snapshot records from that one.
	Report *Report
	// Records, when set, are the slot records to add to; Store is then
	// not loaded, only saved to.
	Records *Records
	// DryRun decides as the pass would (the same records, skips and
	// errors) and never saves: Saved stays false, and Records are what
	// would have been saved.
	DryRun bool
}

// RecordResult is what a pass of Record did.
type RecordResult struct {
	// Arrays has one entry per array considered, in the report's order
	// (for Arrays, in the order named).
	Arrays []RecordedArray
	// Records are the records after the pass (the ones saved when Saved
	// is true); nil when they could not be loaded.
	Records *Records
	// Saved reports whether the store was written.
	Saved bool
}

// RecordedArray is what Record did with one array.
type RecordedArray struct {
	// Array is the array as the report shows it.
	Array Array
	// Record is the array's record; nil when Err is set.
	Record *Record
	// Err says why the array was not recorded: NewRecord's error.
	Err error
	// Reason is Err's reason alone, without the array's name, for a
	// caller that already names the array ("its UUID is unknown").
	Reason string
	// Changed is true when the record is new or its ports or disks
	// changed; a refresh of the LastHealthy times alone is no change.
	Changed bool
}

// Record makes one recording pass: it records every fully healthy array
// (NewRecord decides which) in the store, stamped with the report's time,
// and saves the store when a record is new, changed, or due for a
// refresh (RecordOptions.Refresh). Arrays that are not recordable are
// returned with the reason and left as the store has them.
//
// A store never written counts as empty. A store that cannot be loaded
// is never overwritten: Record then fails with the Store's error (md/store's
// match store.ErrCorrupt or store.ErrVersion) and an empty result. A name
// in Arrays that matches nothing gives ErrNoArray. When saving fails, the
// result says what would have been saved, and the error is the Store's.
func (m *Manager) Record(ctx context.Context, opts RecordOptions) (RecordResult, error) {
	if opts.Store == nil {
		return RecordResult{}, errors.New("md: record needs a Store of slot records")
	}
	rs := opts.Records
	if rs == nil {
		var err error
		rs, err = opts.Store.Load(ctx)
		if errors.Is(err, fs.ErrNotExist) {
			rs, err = &Records{}, nil
		}
		if err != nil {
			return RecordResult{}, err
		}
	}
	res := RecordResult{Records: rs}
	arrays, now, err := m.recordArrays(ctx, opts)
	if err != nil {
		return res, err
	}
	dirty := false
	for _, a := range arrays {
		ra := RecordedArray{Array: a}
		rec, err := NewRecord(a, now)
		if err != nil {
			ra.Err = err
			var ne *notRecordableError
			if errors.As(err, &ne) {
				ra.Reason = ne.Reason
			}
			res.Arrays = append(res.Arrays, ra)
			continue
		}
		ra.Record = &rec
		old, ok := rs.find(rec.UUID)
		fresh := opts.Refresh > 0 && ok && len(old.Slots) > 0 && now.Sub(old.Slots[0].LastHealthy) < opts.Refresh
		if !ok || !old.sameSlots(rec) || !fresh {
			ra.Changed = rs.Put(rec)
			dirty = true
		}
		res.Arrays = append(res.Arrays, ra)
	}
	if !dirty || opts.DryRun {
		return res, nil
	}
	if err := opts.Store.Save(ctx, rs); err != nil {
		return res, err
	}
	res.Saved = true
	return res, nil
}

// recordArrays returns the arrays a recording pass considers and the time
// to stamp their records with.
func (m *Manager) recordArrays(ctx context.Context, opts RecordOptions) ([]Array, time.Time, error) {
	r := opts.Report
	if r == nil {
		var err error
		if r, err = m.DiscoverNames(ctx, opts.Arrays...); err != nil {
			return nil, time.Time{}, err
		}
	} else if len(opts.Arrays) > 0 {
		var keep []Array
		for _, name := range opts.Arrays {
			kname, err := m.resolve(name)
			if err != nil {
				return nil, time.Time{}, err
			}
			n := len(keep)
			for _, a := range r.Arrays {
				if a.Device == kname {
					keep = append(keep, a)
				}
			}
			if len(keep) == n {
				return nil, time.Time{}, fmt.Errorf("%w: %s is not in the report", ErrNoArray, escape.Text(name))
			}
		}
		one := *r
		one.Arrays = keep
		r = &one
	}
	now := r.Time
	if now.IsZero() {
		now = m.now()
	}
	return r.Arrays, now, nil
}
