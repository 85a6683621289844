package sysfs

// ArrayRoles reports what the block device name (such as "vdb" or
// "md127"), with device number dev, is to the md arrays in fsys: whether
// it is itself an array (by name or by device number), and the arrays
// that hold it as a member (by the member's block device name, so that
// a member whose dev-* name differs still counts), sorted. An array
// that disappears or cannot be read while it is looked at is skipped;
// the error is that of listing the arrays.
func (fsys FS) ArrayRoles(name string, dev DevNum) (isArray bool, memberOf []string, err error) {
	arrays, err := fsys.Arrays()
	if err != nil {
		return false, nil, err
	}
	for _, an := range arrays {
		a, err := fsys.Array(an)
		if err != nil {
			continue
		}
		if an == name {
			isArray = true
		}
		if d, err := a.Dev(); err == nil && d == dev {
			isArray = true
		}
		mems, _ := a.Members()
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
