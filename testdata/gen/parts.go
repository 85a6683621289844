package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/go-mdraid/mdraid/internal/vmtest/guest"
)

// mbrPart is one primary partition of an MBR: first sector and length.
type mbrPart struct{ start, sectors uint32 }

// writeMBR writes an MBR partition table with the given primary
// partitions (type 0xfd, Linux raid autodetect) on the disk at path and
// makes the kernel read it again (BLKRRPART).
func writeMBR(path string, parts ...mbrPart) error {
	var mbr [512]byte
	for i, p := range parts {
		e := mbr[446+16*i:]
		e[4] = 0xfd
		binary.LittleEndian.PutUint32(e[8:], p.start)
		binary.LittleEndian.PutUint32(e[12:], p.sectors)
	}
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(mbr[:], 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKRRPART, 0); errno != 0 {
		return fmt.Errorf("BLKRRPART %s: %w", path, errno)
	}
	return nil
}

// partition writes an MBR with parts on each disk named (vda, ...) and
// records it as a step of the case.
func (g *gen) partition(parts []mbrPart, disks ...string) {
	var desc []string
	for _, p := range parts {
		desc = append(desc, fmt.Sprintf("start %d, %d sectors", p.start, p.sectors))
	}
	for _, d := range disks {
		g.note(fmt.Sprintf("write an MBR on /dev/%s with partitions of type fd (%s), then BLKRRPART", d, strings.Join(desc, "; ")))
		if err := writeMBR("/dev/"+d, parts...); err != nil {
			g.fail("%v", err)
		}
		for i := range parts {
			if _, err := os.Stat(fmt.Sprintf("/dev/%s%d", d, i+1)); err != nil {
				g.fail("partition %d of %s: %v", i+1, d, err)
			}
		}
	}
}

// unpartition stops every array and removes the partition tables of the
// disks named, so that the next case finds whole blank disks.
func unpartition(disks ...string) func() error {
	return func() error {
		if err := guest.StopAll(); err != nil {
			return err
		}
		for _, d := range disks {
			if err := writeMBR("/dev/" + d); err != nil {
				return err
			}
		}
		return nil
	}
}

// partitionDisk describes a partition of a scratch disk (vda1) for the
// capture: its node and size; it has no by-path or serial of its own.
func partitionDisk(name string) (guest.Disk, error) {
	b, err := os.ReadFile(filepath.Join("/sys/class/block", name, "size"))
	if err != nil {
		return guest.Disk{}, fmt.Errorf("no disk %s: %w", name, err)
	}
	sectors, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return guest.Disk{}, fmt.Errorf("size of %s: %w", name, err)
	}
	return guest.Disk{Name: name, Path: "/dev/" + name, Size: sectors * 512}, nil
}
