package ioctl_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/ioctl"
)

// Decode a member as GET_DISK_INFO returns it, and encode its device
// number the way HOT_REMOVE_DISK and SET_DISK_FAULTY take it. This needs
// no md device.
func ExampleDiskInfo() {
	members := []ioctl.DiskInfo{
		{Number: 0, Major: 254, Minor: 0, RaidDisk: 0, State: ioctl.DiskActive | ioctl.DiskSync},
		{Number: 1, Major: 254, Minor: 16, RaidDisk: -1, State: ioctl.DiskFaulty},
		{Number: 2, Major: 254, Minor: 32, RaidDisk: 1, State: 0},               // being rebuilt: already has its slot
		{Number: 3, Major: 0, Minor: 0, RaidDisk: -1, State: ioctl.DiskRemoved}, // a number with no device
		{Number: 4, Major: 259, Minor: 256, RaidDisk: -1, State: 1<<9 | 1<<30},  // write_mostly and a bit this package does not name
	}
	for _, m := range members {
		fmt.Printf("number %d: %d:%d dev %#x slot %d state %s\n", m.Number, m.Major, m.Minor, m.Dev(), m.RaidDisk, m.State)
	}
	fmt.Println(ioctl.ArrayClean | ioctl.ArrayBitmapPresent)
	// Output:
	// number 0: 254:0 dev 0xfe00 slot 0 state active,sync
	// number 1: 254:16 dev 0xfe10 slot -1 state faulty
	// number 2: 254:32 dev 0xfe20 slot 1 state 0
	// number 3: 0:0 dev 0x0 slot -1 state removed
	// number 4: 259:256 dev 0x110300 slot -1 state write_mostly,0x40000000
	// clean,bitmap_present
}

// List the members of a running array: ask for descriptor numbers from 0
// upwards until ArrayInfo.NrDisks members have been found. This needs a
// real md device, so the example is compiled but not run.
func ExampleDevice_DiskInfo() {
	d, err := ioctl.Open("/dev/md0")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	info, err := d.ArrayInfo()
	if errors.Is(err, unix.ENODEV) {
		log.Fatal("md0 is not running (see sysfs array_state)")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("metadata %d.%d, level %d, %d slots\n", info.MajorVersion, info.MinorVersion, info.Level, info.RaidDisks)
	// 1.x numbers stay below 1920.
	for n, found := 0, int32(0); found < info.NrDisks && n < 1920; n++ {
		m, err := d.DiskInfo(n)
		if err != nil {
			log.Fatal(err)
		}
		if m.State&ioctl.DiskRemoved != 0 {
			continue
		}
		found++
		fmt.Printf("number %d: %d:%d slot %d %s\n", m.Number, m.Major, m.Minor, m.RaidDisk, m.State)
	}
}

// Take a member out of an array as mdadm --fail then --remove do: mark it
// faulty, then remove it once it has no slot. The kernel refuses with
// EBUSY to fail the last copy of the data, and answers EBUSY to the
// remove while the member still has I/O pending, which passes: retry it a
// few times. This needs a real md device and CAP_SYS_ADMIN, so the example
// is compiled but not run.
func ExampleDevice_SetDiskFaulty() {
	member, err := ioctl.StatBlockDevice("/dev/sdb")
	if err != nil {
		log.Fatal(err)
	}
	d, err := ioctl.Open("/dev/md0")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	err = d.SetDiskFaulty(member.Dev())
	if errors.Is(err, unix.EBUSY) {
		log.Fatal("md0 would not survive without sdb: nothing was changed")
	}
	if err != nil {
		log.Fatal(err)
	}
	for try := 0; ; try++ {
		err = d.HotRemoveDisk(member.Dev())
		if !errors.Is(err, unix.EBUSY) || try == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		log.Fatalf("sdb is marked faulty but still bound to md0: %v", err)
	}
	fmt.Println("sdb removed from md0")
}
