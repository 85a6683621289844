// Package superblocktest finds real md member images for tests of the
// superblock codec and its users.
//
// # Sources
//
//   - util-linux's blkid test images (mdraid.img.xz, a 0.90 raid1 member,
//     and mdraid-1.img.xz, a 1.2 raid0 member) in
//     <module root>/../shared/testvectors/util-linux/ (the shared test
//     vectors beside the clone, which CI always has; their README says
//     the project does not copy them), decompressed with the xz command,
//     with the values blkid reports for them.
//   - real-kernel captures, every member (<dev>.regions.gz) of every case
//     under <module root>/testdata/fixtures/, read with internal/fixture,
//     with the mdadm --examine output captured beside it.
//
// Without the shared test vectors or the xz command the util-linux images
// are left out, and a test asking for one by name skips; under CI=true
// both fail the test instead, so that CI never passes by skipping.
package superblocktest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// Image is one member device image.
type Image struct {
	// Name identifies the image in test names, e.g. "util-linux/mdraid-1"
	// or "fixtures/raid5-inactive/vda".
	Name string
	// ReaderAt reads the device; Size is its size in bytes.
	ReaderAt io.ReaderAt
	Size     int64
	// Examine is mdadm --examine's output for the device, when captured
	// (fixtures only).
	Examine string
	// Kernel is the kernel release that made the array (fixtures only,
	// e.g. "7.2.13+deb14-amd64").
	Kernel string
	// Blkid holds the ID_FS_* values blkid reports (util-linux images
	// only), keyed without the ID_FS_ prefix: UUID, UUID_SUB, LABEL,
	// VERSION, ...
	Blkid map[string]string
}

// Images returns every image it can find (see the package comment). A
// missing util-linux directory is not an error; a source that exists but
// cannot be read fails the test.
func Images(tb testing.TB) []Image {
	tb.Helper()
	var out []Image
	out = append(out, utilLinuxImages(tb)...)
	out = append(out, fixtureImages(tb)...)
	return out
}

// ByName returns the image named name, skipping the test when it is absent.
func ByName(tb testing.TB, name string) Image {
	tb.Helper()
	for _, img := range Images(tb) {
		if img.Name == name {
			return img
		}
	}
	Missing(tb, "test image %s not available", name)
	return Image{}
}

// Missing skips the test for want of an input it needs, or fails it under
// CI=true, where every input of the suite must be there.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true, so not skipped: "+format, args...)
	}
	tb.Skipf(format, args...)
}

func utilLinuxImages(tb testing.TB) []Image {
	tb.Helper()
	dir := filepath.Join(filepath.Dir(fixture.Root(tb)), "shared", "testvectors", "util-linux")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("the shared test vectors are missing (CI=true: not skipped): %v", err)
		}
		tb.Logf("no shared test vectors beside the clone: leaving out the util-linux images")
		return nil
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("xz not installed, which the util-linux images in %s need (CI=true: not skipped)", dir)
		}
		tb.Logf("xz not installed: leaving out the util-linux images")
		return nil
	}
	var out []Image
	for _, name := range []string{"mdraid", "mdraid-1"} {
		data, err := exec.Command(xz, "-dc", filepath.Join(dir, name+".img.xz")).Output()
		if err != nil {
			tb.Fatalf("xz -dc %s.img.xz: %v", name, err)
		}
		exp, err := readExpected(filepath.Join(dir, "low-probe-"+name+".expected"))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, Image{Name: "util-linux/" + name, ReaderAt: bytes.NewReader(data), Size: int64(len(data)), Blkid: exp})
	}
	return out
}

func readExpected(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if ok {
			m[strings.TrimPrefix(k, "ID_FS_")] = v
		}
	}
	return m, s.Err()
}

// Bytes returns the whole device. Fixture devices are sparse captures;
// the parts not captured read as zeros.
func (img Image) Bytes(tb testing.TB) []byte {
	tb.Helper()
	if r, ok := img.ReaderAt.(*bytes.Reader); ok && r.Size() == img.Size {
		b := make([]byte, img.Size)
		if _, err := r.ReadAt(b, 0); err != nil {
			tb.Fatal(err)
		}
		return b
	}
	b := make([]byte, img.Size)
	if _, err := img.ReaderAt.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		tb.Fatalf("%s: %v", img.Name, err)
	}
	return b
}

// fixtureImages returns every member of every case under
// <module root>/testdata/fixtures.
func fixtureImages(tb testing.TB) []Image {
	tb.Helper()
	var out []Image
	for _, c := range fixture.All(tb) {
		for _, m := range c.Members {
			im, err := m.Open()
			if err != nil {
				tb.Fatalf("%s/%s: %v", c.Dir, m.Name, err)
			}
			out = append(out, Image{
				Name:     "fixtures/" + filepath.Base(c.Dir) + "/" + m.Name,
				ReaderAt: im,
				Size:     im.Size(),
				Examine:  m.Examine,
				Kernel:   c.Info.Kernel,
			})
		}
	}
	return out
}

// WriteFile writes the device to path as a sparse file: 1 MiB chunks that
// are all zero are skipped. It returns path.
func WriteFile(tb testing.TB, img Image, path string) string {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(img.Size); err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	zero := make([]byte, len(buf))
	for off := int64(0); off < img.Size; off += int64(len(buf)) {
		n := int(min(int64(len(buf)), img.Size-off))
		if _, err := img.ReaderAt.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			tb.Fatalf("%s: %v", img.Name, err)
		}
		if bytes.Equal(buf[:n], zero[:n]) {
			continue
		}
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			tb.Fatal(err)
		}
	}
	return path
}
