package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
)

// ArrayRoles reports what the block device name (such as "vdb" or
// "md127"), with device number dev, is to the md arrays in fsys: whether
// it is itself an array (by name or by device number), and the arrays
// that hold it as a member (by the member's block device name, so that
// a member whose dev-* name differs still counts), sorted. An array
// that disappears while it is looked at is skipped; any other failure to
// read an array's device number or members is an error, as is one
// listing the arrays: the answer could be wrong.
func (fsys FS) ArrayRoles(name string, dev DevNum) (isArray bool, memberOf []string, err error) {
	arrays, err := fsys.Arrays()
	if err != nil {
		return false, nil, err
	}
	for _, an := range arrays {
		a, err := fsys.Array(an)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, nil, err
		}
		if an == name {
			isArray = true
		}
		d, err := a.Dev()
		if errors.Is(err, fs.ErrNotExist) {
			continue // stopped and gone since listed
		}
		if err != nil {
			return false, nil, fmt.Errorf("sysfs: the device number of %s: %w", an, err)
		}
		if d == dev {
			isArray = true
		}
		mems, err := a.Members()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, nil, fmt.Errorf("sysfs: the members of %s: %w", an, err)
		}
		for _, mem := range mems {
			kn := mem.Name()
			if bl, err := mem.Block(); err == nil {
				kn = bl.Name
			}
			if kn == name {
				memberOf = append(memberOf, an)
			}
		}
	}
	return isArray, memberOf, nil
}
