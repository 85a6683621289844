package md

// This file holds what the candidate is stacked on and what is stacked on
// it beyond sysfs holders/ (blockdev.WalkStack), and the rule that turns
// it into candidate facts. The planner refuses a candidate with any.

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-mdraid/mdraid/blockdev"
	"github.com/go-mdraid/mdraid/sysfs"
)

// stackFacts walks the stack around the candidate, kernel name name, and
// records in c:
//
//   - StackedOn: a device below it (through slaves/, its whole disk, or a
//     loop device's backing file) that is an md array or a member of one.
//     Writing the candidate would write inside that array: an LVM volume
//     on the degraded array itself, a loop over a member or over a file
//     on the array.
//   - UsedBy: a block device that a loop device (the candidate, or one
//     below it) is set up over and that is in use: mounted, claimed
//     (holders), or with a partition that is; and every loop device set
//     up over the candidate or its partitions. Loop devices claim nothing,
//     so neither shows in holders/, and O_EXCL on the candidate succeeds.
//
// What cannot be established (a loop's backing file that is gone or
// cannot be stat'ed, a mount table that cannot be read) is recorded as
// unknown, which the planner refuses.
func (m *Manager) stackFacts(c *Candidate, name string) {
	st, err := blockdev.WalkStack(m.fs, name, blockdev.StackOptions{Stat: m.ops.statFile})
	if err != nil {
		c.unknown(&c.busyErr, "stacking", err)
		if st == nil {
			return
		}
	}
	for _, l := range st.Below {
		isArray, memberOf, err := m.arrayRoles(l.Name, l.Dev)
		if err != nil {
			c.unknown(&c.busyErr, "stacking", err)
		}
		switch {
		case l.Array || isArray:
			c.StackedOn = append(c.StackedOn, fmt.Sprintf("array %s (%s)", l.Name, l))
		case len(memberOf) > 0:
			c.StackedOn = append(c.StackedOn, fmt.Sprintf("%s, a member of %s (%s)", l.Name, strings.Join(memberOf, ", "), l))
		}
		if l.Via != blockdev.ViaLoopDevice {
			// Through slaves/ the device below is claimed by the
			// device above (and may hold other volumes); through a
			// backing file its file system is mounted. Only a loop
			// over a block device shares that device's bytes unclaimed.
			continue
		}
		if why, err := m.blockInUse(l.Name, l.Dev, l.Holders); err != nil {
			c.unknown(&c.busyErr, "stacking", err)
		} else if why != "" {
			c.UsedBy = append(c.UsedBy, fmt.Sprintf("%s, which is %s", l, why))
		}
	}
	for _, l := range st.Above {
		c.UsedBy = append(c.UsedBy, l.String())
	}
}

// blockInUse says how the block device name (dev, claimed by holders) or
// one of its partitions is in use: mounted or claimed. It returns "" when
// neither is.
func (m *Manager) blockInUse(name string, dev sysfs.DevNum, holders []string) (string, error) {
	var why []string
	if len(holders) > 0 {
		why = append(why, "held by "+strings.Join(holders, ", "))
	}
	devs := []sysfs.DevNum{dev}
	parts, err := m.partitions(name)
	if err != nil {
		return "", err
	}
	for _, p := range parts {
		pd, err := blockdev.Lookup(m.fs, m.devRoot, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since listed
		}
		if err != nil {
			return "", fmt.Errorf("md: partition %s of %s: %w", p, name, err)
		}
		devs = append(devs, pd.Dev)
		if len(pd.Holders) > 0 {
			why = append(why, fmt.Sprintf("has partition %s held by %s", p, strings.Join(pd.Holders, ", ")))
		}
	}
	mounts, err := blockdev.Mounts(m.ops.mountInfo, devs)
	if err != nil {
		return "", err
	}
	if len(mounts) > 0 {
		why = append(why, "mounted on "+strings.Join(mounts, ", "))
	}
	return strings.Join(why, "; "), nil
}
