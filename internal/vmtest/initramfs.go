package vmtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cavaliergopher/cpio"
)

//go:embed init.sh
var initScript []byte

// Modules the guest loads, in this order after their dependencies.
// virtio_pci may be built in; 9p is optional (without it there are no
// shares). The md personalities other than raid1 are loaded when the
// kernel has them: Debian dropped linear (and multipath) from its 6.12
// and newer builds, so a test that needs one asks [Rig.RequireModules],
// which skips it loudly on such a kernel.
var (
	requiredModules    = []string{"virtio_blk", "md_mod", "raid1"}
	personalityModules = []string{"linear", "raid0", "raid10", "raid456"}
	optionalModules    = []string{"virtio_pci", "9pnet_virtio", "9p", "loop", "ext4"}
)

// missing returns the names among mods that the kernel has neither as a
// module nor built in.
func (ix *modIndex) missing(mods []string) []string {
	var out []string
	for _, name := range mods {
		n := modName(name)
		if _, ok := ix.byName[n]; !ok && !ix.builtin[n] {
			out = append(out, name)
		}
	}
	return out
}

// archive is a newc cpio writer that creates parent directories on demand.
type archive struct {
	w    *cpio.Writer
	dirs map[string]bool
}

func newArchive(w io.Writer) *archive {
	return &archive{w: cpio.NewWriter(w), dirs: map[string]bool{"": true, ".": true, "/": true}}
}

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (a *archive) dir(p string) error {
	p = clean(p)
	if a.dirs[p] {
		return nil
	}
	if err := a.dir(path.Dir(p)); err != nil {
		return err
	}
	a.dirs[p] = true
	return a.w.WriteHeader(&cpio.Header{Name: p, Mode: cpio.TypeDir | 0o755})
}

func (a *archive) file(p string, mode cpio.FileMode, data []byte) error {
	p = clean(p)
	if err := a.dir(path.Dir(p)); err != nil {
		return err
	}
	if err := a.w.WriteHeader(&cpio.Header{Name: p, Mode: cpio.TypeReg | mode, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := a.w.Write(data)
	return err
}

// copyFile adds the host file src (symlinks followed) at guest path p.
func (a *archive) copyFile(p, src string, mode cpio.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return a.file(p, mode, data)
}

func (a *archive) close() error { return a.w.Close() }

// modIndex is the parsed modules.dep of one kernel.
type modIndex struct {
	dir     string
	deps    map[string][]string // relative path -> dependency relative paths
	byName  map[string]string   // normalised module name -> relative path
	builtin map[string]bool     // normalised names of built-in modules
	softPre map[string][]string // module name -> relative paths to load first (modules.softdep)
	aliases map[string][]string // alias -> module names (modules.alias)
}

func modName(p string) string {
	b := path.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

func loadModIndex(dir string) (*modIndex, error) {
	ix := &modIndex{dir: dir, deps: map[string][]string{}, byName: map[string]string{}, builtin: map[string]bool{}, softPre: map[string][]string{}}
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, unavailable("%v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mod, deps, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		ix.deps[mod] = strings.Fields(deps)
		ix.byName[modName(mod)] = mod
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			ix.builtin[modName(l)] = true
		}
	}
	// Soft dependencies such as "softdep libcrc32c pre: crc32c" name a
	// module or an alias; libcrc32c fails to load without one (raid456
	// needs it). Aliases resolve through modules.alias, preferring the
	// portable *_generic implementation.
	aliases := map[string][]string{}
	ix.aliases = aliases
	if b, err := os.ReadFile(filepath.Join(dir, "modules.alias")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "alias" {
				aliases[f[1]] = append(aliases[f[1]], f[2])
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.softdep")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != "softdep" {
				continue
			}
			for _, name := range f[2:] {
				if name == "post:" {
					break
				}
				if name == "pre:" {
					continue
				}
				if rel := ix.resolve(name, aliases[name]); rel != "" {
					ix.softPre[modName(f[1])] = append(ix.softPre[modName(f[1])], rel)
				}
			}
		}
	}
	return ix, nil
}

func (ix *modIndex) resolve(name string, aliasTargets []string) string {
	if rel, ok := ix.byName[modName(name)]; ok {
		return rel
	}
	best := ""
	for _, t := range aliasTargets {
		if rel, ok := ix.byName[modName(t)]; ok && (best == "" || strings.HasSuffix(modName(t), "_generic")) {
			best = rel
		}
	}
	return best
}

// order returns the modules to insmod, dependencies first, each once.
// modules.dep lists the whole dependency closure of a module, so a
// depth-first walk gives a valid load order.
func (ix *modIndex) order(required, optional []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(rel string)
	visit = func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		for _, d := range ix.softPre[modName(rel)] {
			visit(d)
		}
		for _, d := range ix.deps[rel] {
			visit(d)
		}
		out = append(out, rel)
	}
	for _, name := range required {
		n := modName(name)
		rel, ok := ix.byName[n]
		switch {
		case ok:
			visit(rel)
		case ix.builtin[n]:
		default:
			return nil, unavailable("kernel module %s not found in %s", name, ix.dir)
		}
	}
	for _, name := range optional {
		if rel, ok := ix.byName[modName(name)]; ok {
			visit(rel)
		}
	}
	return out, nil
}

// moduleData returns a module's contents, decompressed: busybox insmod
// wants a plain .ko.
func moduleData(p string) (name string, data []byte, err error) {
	data, err = os.ReadFile(p)
	if err != nil {
		return "", nil, err
	}
	switch {
	case strings.HasSuffix(p, ".ko"):
		return p, data, nil
	case strings.HasSuffix(p, ".ko.xz"):
		data, err = decompressCmd(data, "xz", "-dc")
	case strings.HasSuffix(p, ".ko.zst"):
		data, err = decompressCmd(data, "zstd", "-dcq")
	case strings.HasSuffix(p, ".ko.gz"):
		data, err = decompressCmd(data, "gzip", "-dc")
	default:
		return "", nil, fmt.Errorf("vmtest: unknown module format %s", p)
	}
	return p[:strings.Index(p, ".ko")+3], data, err
}

// libSearchPath is where shared libraries are looked for, after DT_RUNPATH.
var libSearchPath = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// elfClosure returns the interpreter and shared libraries that the ELF
// binaries need, as paths valid on both host and guest, read from PT_INTERP
// and DT_NEEDED (no ldd: it would run the binary).
func elfClosure(bins ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(p string) error
	visit = func(p string) error {
		f, err := elf.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return err
			}
			interp := string(bytes.TrimRight(b, "\x00"))
			if !seen[interp] {
				seen[interp] = true
				out = append(out, interp)
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return err
		}
		dirs := append([]string(nil), libSearchPath...)
		if rp, _ := f.DynString(elf.DT_RUNPATH); len(rp) > 0 {
			dirs = append(strings.Split(rp[0], ":"), dirs...)
		}
	next:
		for _, lib := range needed {
			for _, d := range dirs {
				cand := filepath.Join(d, lib)
				if _, err := os.Stat(cand); err != nil {
					continue
				}
				if seen[cand] || seen[path.Base(cand)] {
					continue next
				}
				seen[cand], seen[path.Base(cand)] = true, true
				out = append(out, cand)
				if err := visit(cand); err != nil {
					return err
				}
				continue next
			}
			return fmt.Errorf("vmtest: %s needs %s, not found", p, lib)
		}
		return nil
	}
	for _, b := range bins {
		if err := visit(b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isStatic(p string) (bool, error) {
	f, err := elf.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// findBusybox returns a statically linked busybox: the guest has no libc
// for it otherwise (busybox-static replaces Debian's dynamic one).
func findBusybox() (string, error) {
	cands := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p, err := exec.LookPath("busybox"); err == nil {
		cands = append([]string{p}, cands...)
	}
	for _, c := range cands {
		if ok, err := isStatic(c); err == nil && ok {
			return c, nil
		}
	}
	return "", unavailable("no statically linked busybox (apt-get install busybox-static)")
}

func findMdadm() (string, error) {
	for _, c := range []string{"/sbin/mdadm", "/usr/sbin/mdadm"} {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	if p, err := exec.LookPath("mdadm"); err == nil {
		return p, nil
	}
	return "", unavailable("mdadm not installed (apt-get install mdadm)")
}

// baseInitramfs builds (or finds in the cache) the part of the initramfs
// shared by every boot: busybox, mdadm and its libraries, modules, /init.
// The cache key covers every input's path, size and mtime.
func baseInitramfs(k *Kernel) (_ string, missing []string, err error) {
	busybox, err := findBusybox()
	if err != nil {
		return "", nil, err
	}
	mdadm, err := findMdadm()
	if err != nil {
		return "", nil, err
	}
	libs, err := elfClosure(mdadm)
	if err != nil {
		return "", nil, err
	}
	ix, err := loadModIndex(k.Modules)
	if err != nil {
		return "", nil, err
	}
	missing = ix.missing(personalityModules)
	mods, err := ix.order(requiredModules, append(append([]string(nil), personalityModules...), optionalModules...))
	if err != nil {
		return "", nil, err
	}

	h := sha256.New()
	fmt.Fprintf(h, "v3 %s\n%s\n", k.Version, initScript)
	inputs := append([]string{busybox, mdadm}, libs...)
	for _, m := range mods {
		inputs = append(inputs, filepath.Join(k.Modules, m))
	}
	for _, p := range inputs {
		st, err := os.Stat(p)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
	}
	dir, err := CacheDir()
	if err != nil {
		return "", nil, err
	}
	out := filepath.Join(dir, "initramfs-"+k.Version+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".cpio")
	if _, err := os.Stat(out); err == nil {
		return out, missing, nil
	}

	err = writeFileAtomic(out, func(f *os.File) error {
		bw := bufio.NewWriter(f)
		a := newArchive(bw)
		for _, d := range []string{"proc", "sys", "dev", "run", "tmp", "mnt", "root", "etc", "src", "bin", "sbin", "usr/bin", "usr/sbin", "vmtest"} {
			if err := a.dir(d); err != nil {
				return err
			}
		}
		if err := a.file("init", 0o755, initScript); err != nil {
			return err
		}
		if err := a.copyFile("bin/busybox", busybox, 0o755); err != nil {
			return err
		}
		if err := a.copyFile("sbin/mdadm", mdadm, 0o755); err != nil {
			return err
		}
		for _, l := range libs {
			if err := a.copyFile(l, l, 0o755); err != nil {
				return err
			}
		}
		var list, dep bytes.Buffer
		for _, m := range mods {
			name, data, err := moduleData(filepath.Join(k.Modules, m))
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(k.Modules, name)
			guest := path.Join("/lib/modules", k.Version, rel)
			if err := a.file(guest, 0o644, data); err != nil {
				return err
			}
			fmt.Fprintln(&list, guest)
			fmt.Fprintf(&dep, "%s:", rel)
			for _, d := range ix.deps[m] {
				fmt.Fprintf(&dep, " %s", d[:strings.Index(d, ".ko")+3]) // stored decompressed
			}
			dep.WriteString("\n")
		}
		if err := a.file("vmtest/modules", 0o644, list.Bytes()); err != nil {
			return err
		}
		// A filtered modules.dep lets busybox modprobe resolve what is there,
		// and a filtered modules.alias the aliases the kernel asks for
		// (block-major-9-*, md-level-1, ...) when a boot leaves md_mod out
		// (VMTEST_NOLOAD).
		if err := a.file(path.Join("lib/modules", k.Version, "modules.dep"), 0o644, dep.Bytes()); err != nil {
			return err
		}
		if err := a.file(path.Join("lib/modules", k.Version, "modules.alias"), 0o644, ix.filteredAliases(mods)); err != nil {
			return err
		}
		var libDirs []string
		seen := map[string]bool{}
		for _, l := range libs {
			if d := path.Dir(l); !seen[d] {
				seen[d] = true
				libDirs = append(libDirs, d)
			}
		}
		sort.Strings(libDirs)
		if err := a.file("vmtest/ld-library-path", 0o644, []byte(strings.Join(libDirs, ":")+"\n")); err != nil {
			return err
		}
		if err := a.close(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return padTo(f, 512)
	})
	if err != nil {
		return "", nil, fmt.Errorf("vmtest: build initramfs: %w", err)
	}
	// Drop images built from other inputs a day ago or more (not at once:
	// another checkout may be booting one right now).
	old, _ := filepath.Glob(filepath.Join(dir, "initramfs-*.cpio"))
	for _, o := range old {
		if st, err := os.Stat(o); err == nil && o != out && time.Since(st.ModTime()) > 24*time.Hour {
			os.Remove(o)
		}
	}
	return out, missing, nil
}

// filteredAliases returns a modules.alias of the aliases whose module is
// one of mods (paths relative to the modules directory), sorted.
func (ix *modIndex) filteredAliases(mods []string) []byte {
	have := map[string]bool{}
	for _, m := range mods {
		have[modName(m)] = true
	}
	var lines []string
	for alias, targets := range ix.aliases {
		for _, t := range targets {
			if have[modName(t)] {
				lines = append(lines, "alias "+alias+" "+t+"\n")
			}
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, ""))
}

// padTo pads a file with zeros to a multiple of n bytes; the kernel skips
// zeros between concatenated cpio archives.
func padTo(f *os.File, n int64) error {
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if r := off % n; r != 0 {
		_, err = f.Write(make([]byte, n-r))
	}
	return err
}

// ProgramFiles returns a dynamically linked host program with its
// interpreter and libraries, as a [Config.Files] map: each at its host
// path in the guest. A boot that runs a program the base initramfs lacks
// (udevd) adds them.
func ProgramFiles(bin string) (map[string]string, error) {
	libs, err := elfClosure(bin)
	if err != nil {
		return nil, err
	}
	files := map[string]string{bin: bin}
	for _, l := range libs {
		files[l] = l
	}
	return files, nil
}
