package md

import (
	"github.com/go-mdraid/mdraid/ioctl"
	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Descriptor numbers
//
// A new member's superblock carries a descriptor number (dev_number in
// 1.x, this_disk.number in 0.90), and ADD_NEW_DISK fails with EBUSY when
// a bound member already holds it in kernel memory. The superblocks on
// disk are not enough to know which numbers are held: for 0.90 the
// kernel renumbers every member that is not active (faulty, spare, or
// still rebuilding) in memory each time it writes the superblocks, from
// raid_disks upwards, and a faulty member's own superblock is no longer
// written. So after a member of a 2-disk 0.90 array fails, the faulty
// member holds number 2 in the kernel while its superblock still says 1
// (Linux super_90_sync; the EBUSY it causes was reproduced on 6.1 and
// 7.2, issue 10 item 3).
//
// The planner therefore takes the union of three sources: the numbers in
// the bound members' superblocks, the numbers GET_DISK_INFO reports as
// held, and, for 0.90, the numbers raid_disks .. raid_disks+k-1 where k
// is the count of bound members that are not active (what a renumbering
// may hand out, whether or not it has happened yet). The last rule needs
// only sysfs, so it holds when the ioctl cannot be issued.

// kernelNumbers is what GET_DISK_INFO said about one array.
type kernelNumbers struct {
	held map[uint32]sysfs.DevNum // descriptor number -> member device
	upTo uint32                  // numbers below upTo were asked
}

// diskNumbers asks the kernel, with GET_DISK_INFO for every number below
// upTo, which descriptor numbers the array's members hold.
func (k sysKernel) diskNumbers(array string, upTo int) (map[uint32]sysfs.DevNum, error) {
	held := map[uint32]sysfs.DevNum{}
	err := k.withDevice(array, func(d *ioctl.Device) error {
		for n := 0; n < upTo; n++ {
			info, err := d.DiskInfo(n)
			if err != nil {
				return err
			}
			if info.Major != 0 || info.Minor != 0 {
				held[uint32(n)] = sysfs.DevNum{Major: uint32(info.Major), Minor: uint32(info.Minor)}
			}
		}
		return nil
	})
	return held, err
}

// numbersToAsk is how many descriptor numbers to ask the kernel about
// so that the lowest free number at or above raid_disks is among them:
// every number below 27 for 0.90, and for 1.x enough that the numbers
// held by the kernel, by superblocks and by the 0.90 rule cannot all be
// taken (each source names at most one number per member).
func numbersToAsk(s *snapshot, v superblock.Version) int {
	if v == superblock.Version090 {
		return superblock.Disks090
	}
	return min(superblock.MaxDev1, s.raidDisks+3*len(s.members)+1)
}

// renumbered090 returns the numbers the kernel may give the inactive
// members of a 0.90 array when it next writes the superblocks: raid_disks
// upwards, one per member that is faulty, unslotted or not in sync.
func renumbered090(s *snapshot) []uint32 {
	var out []uint32
	n := uint32(max(s.raidDisks, 0))
	for _, ms := range s.members {
		active := ms.state.Has(sysfs.FlagInSync) && !ms.state.Failed() && ms.Slot >= 0
		if !active {
			out = append(out, n)
			n++
		}
	}
	return out
}
