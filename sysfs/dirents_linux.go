package sysfs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// listDir returns the names in directory p that start with prefix and are
// directories (dirs) or anything (!dirs), in the order the kernel lists
// them. It reads the directory with getdents64 into one buffer and makes a
// string of a kept name only: an md array's directory lists some forty
// attributes for a handful of members, and os.ReadDir would allocate an
// entry for each and sort them.
func listDir(p, prefix string, dirs bool) ([]string, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var out []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino (8), off (8), reclen (2),
			// type (1), name (NUL-terminated).
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if !bytes.HasPrefix(name, []byte(prefix)) {
				continue
			}
			switch {
			case !dirs:
			case typ == syscall.DT_DIR:
			case typ == syscall.DT_UNKNOWN:
				// A file system that does not fill in the type.
				if fi, err := os.Lstat(filepath.Join(p, string(name))); err != nil || !fi.IsDir() {
					continue
				}
			default:
				continue
			}
			out = append(out, string(name))
		}
	}
}
