package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	qt "github.com/frankban/quicktest"
)

// TestReadmeInstallIsStatic takes the install command from the README and
// checks that building mdctl the way it says (its environment, from this
// tree) gives a statically linked binary: no interpreter, no shared
// libraries.
func TestReadmeInstallIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	qt.Assert(t, err, qt.IsNil)
	m := regexp.MustCompile(`(?m)^((?:[A-Z_]+=\S+ )*)go install github\.com/go-mdraid/mdraid/cmd/mdctl@latest$`).FindSubmatch(readme)
	qt.Assert(t, m, qt.IsNotNil, qt.Commentf("README has no install command"))
	bin := filepath.Join(t.TempDir(), "mdctl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), strings.Fields(string(m[1]))...)
	out, err := cmd.CombinedOutput()
	qt.Assert(t, err, qt.IsNil, qt.Commentf("%s", out))
	f, err := elf.Open(bin)
	qt.Assert(t, err, qt.IsNil)
	defer f.Close()
	for _, p := range f.Progs {
		qt.Assert(t, p.Type, qt.Not(qt.Equals), elf.PT_INTERP, qt.Commentf("dynamically linked"))
	}
	libs, err := f.ImportedLibraries()
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, libs, qt.HasLen, 0)
}

// TestInstallContrib (issue 31): the contrib rules and units name mdctl
// as @BINDIR@/mdctl, never a fixed /usr/local/bin, and
// scripts/install-contrib installs every one of them with the path given
// at install time written in, nothing else changed.
func TestInstallContrib(t *testing.T) {
	c := qt.New(t)
	root := filepath.Join("..", "..")
	var srcs []string
	for _, g := range []string{"contrib/udev/*.rules", "contrib/systemd/*.service", "contrib/systemd/*.timer",
		"contrib/systemd-shutdown/*", "contrib/initramfs-tools/hooks/*", "contrib/initramfs-tools/scripts/*/*",
		"contrib/dracut/90mdctl/*"} {
		m, err := filepath.Glob(filepath.Join(root, g))
		c.Assert(err, qt.IsNil)
		srcs = append(srcs, m...)
	}
	c.Assert(len(srcs) > 5, qt.IsTrue)
	for _, s := range srcs {
		b, err := os.ReadFile(s)
		c.Assert(err, qt.IsNil)
		c.Check(string(b), qt.Not(qt.Contains), "/usr/local/bin", qt.Commentf("%s hard-codes an install location", s))
	}

	dest := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "install-contrib"))
	cmd.Env = append(os.Environ(), "DESTDIR="+dest, "BINDIR=/opt/md tools/bin")
	out, err := cmd.CombinedOutput()
	c.Assert(err, qt.Not(qt.IsNil), qt.Commentf("a BINDIR with a space was accepted: %s", out))
	ents, _ := os.ReadDir(dest)
	c.Check(ents, qt.HasLen, 0, qt.Commentf("a refused install wrote files"))

	cmd = exec.Command(filepath.Join(root, "scripts", "install-contrib"))
	cmd.Env = append(os.Environ(), "DESTDIR="+dest, "BINDIR=bin")
	_, err = cmd.CombinedOutput()
	c.Check(err, qt.Not(qt.IsNil), qt.Commentf("a relative BINDIR was accepted"))

	cmd = exec.Command(filepath.Join(root, "scripts", "install-contrib"))
	cmd.Env = append(os.Environ(), "DESTDIR="+dest, "BINDIR=/opt/mdraid/sbin", "INITRAMFS=initramfs-tools")
	out, err = cmd.CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
	cmd = exec.Command(filepath.Join(root, "scripts", "install-contrib"))
	cmd.Env = append(os.Environ(), "DESTDIR="+dest, "BINDIR=/opt/mdraid/sbin", "INITRAMFS=dracut")
	out, err = cmd.CombinedOutput()
	c.Assert(err, qt.IsNil, qt.Commentf("%s", out))
	for _, s := range srcs {
		dir, mode := "/etc/systemd/system", os.FileMode(0o644)
		rel, _ := filepath.Rel(filepath.Join(root, "contrib"), s)
		switch {
		case strings.HasPrefix(rel, "dracut/"):
			dir = "/usr/lib/dracut/modules.d/90mdctl"
			if strings.HasSuffix(s, ".sh") {
				mode = 0o755
			}
		case strings.HasSuffix(s, ".rules"):
			dir = "/etc/udev/rules.d"
		case strings.HasPrefix(rel, "systemd-shutdown/"):
			dir, mode = "/usr/lib/systemd/system-shutdown", 0o755
		case strings.HasPrefix(rel, "initramfs-tools/"):
			dir, mode = filepath.Join("/etc", filepath.Dir(rel)), 0o755
		}
		st, err := os.Stat(filepath.Join(dest, dir, filepath.Base(s)))
		c.Assert(err, qt.IsNil)
		c.Check(st.Mode().Perm(), qt.Equals, mode, qt.Commentf("%s", s))
		got, err := os.ReadFile(filepath.Join(dest, dir, filepath.Base(s)))
		c.Assert(err, qt.IsNil)
		src, err := os.ReadFile(s)
		c.Assert(err, qt.IsNil)
		c.Check(string(got), qt.Equals, strings.ReplaceAll(string(src), "@BINDIR@", "/opt/mdraid/sbin"))
		c.Check(string(got), qt.Not(qt.Contains), "@BINDIR@")
		if strings.Contains(string(src), "@BINDIR@/mdctl") {
			c.Check(string(got), qt.Contains, "/opt/mdraid/sbin/mdctl")
		}
	}
}
