package blockdev

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestArgPath(t *testing.T) {
	tests := []struct {
		name, devRoot, arg, want string
	}{
		{"bare kernel name", "/dev", "vda", "/dev/vda"},
		{"partition", "/dev", "nvme0n1p2", "/dev/nvme0n1p2"},
		{"kernel name under another dev root", "/tmp/x/dev", "sdb", "/tmp/x/dev/sdb"},
		{"device node", "/dev", "/dev/vda", "/dev/vda"},
		{"by-path link", "/dev", "/dev/disk/by-path/pci-0000:00:05.0", "/dev/disk/by-path/pci-0000:00:05.0"},
		{"by-id link", "/dev", "/dev/disk/by-id/virtio-serial1", "/dev/disk/by-id/virtio-serial1"},
		{"relative with ./", "/dev", "./vda", "./vda"},
		{"relative with a directory", "/dev", "images/disk.img", "images/disk.img"},
		{"parent directory", "/dev", "../disk.img", "../disk.img"},
		{"empty", "/dev", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt.Check(t, ArgPath(tt.devRoot, tt.arg), qt.Equals, tt.want)
		})
	}
}
