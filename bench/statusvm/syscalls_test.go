package main

import (
	"strings"
	"testing"
)

// A trace in strace -f's format, one member and one array, with a call
// split by another thread.
const sampleTrace = `100 openat(AT_FDCWD, "/sys/block", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 3
100 getdents64(3, 0x1 /* 34 entries */, 8192) = 880
100 close(3)                          = 0
100 openat(AT_FDCWD, "/sys/block/md0/md/array_state", O_RDONLY|O_CLOEXEC) = 3
100 read(3, "clean\n", 4096)          = 6
100 close(3)                          = 0
100 openat(AT_FDCWD, "/sys/block/md0/md/dev-vda/state", O_RDONLY|O_CLOEXEC) = 3
100 read(3, "in_sync\n", 4096)        = 8
100 close(3)                          = 0
100 openat(AT_FDCWD, "/sys/devices/pci0000:00/0000:00:10.0/virtio2/block/vda/size", O_RDONLY|O_CLOEXEC) = 3
100 read(3, "131072\n", 4096)         = 7
100 close(3)                          = 0
100 newfstatat(AT_FDCWD, "/sys/devices/pci0000:00/0000:00:10.0/virtio2/uevent", {st_mode=S_IFREG|0644, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
101 openat(AT_FDCWD, "/dev/vda", O_RDONLY|O_DIRECT|O_CLOEXEC <unfinished ...>
100 newfstatat(AT_FDCWD, "/sys/devices/pci0000:00/uevent", {st_mode=S_IFREG|0644, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
101 <... openat resumed>)             = 6
101 pread64(6, "\374N+\251\1\0\0\0"..., 4096, 4096) = 4096
101 close(6)                          = 0
`

func TestParseTraceCharges(t *testing.T) {
	rep, err := parseTrace(strings.NewReader(sampleTrace), map[string]string{"10": "vda"})
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.arrays["md0"]; a == nil || a.total() != 3 || a.reads != 1 {
		t.Errorf("md0: %+v", a)
	}
	// state (3), size (3), the walk's uevent (1), the superblock (3).
	if m := rep.members["vda"]; m == nil || m.total() != 10 || m.reads != 3 || len(m.files) != 3 {
		t.Errorf("vda: %+v", m)
	}
	if s := rep.members["(shared)"]; s == nil || s.total() != 1 {
		t.Errorf("shared: %+v", s)
	}
	if n := rep.process.total(); n != 3 {
		t.Errorf("process: %d calls", n)
	}
}
