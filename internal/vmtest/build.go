package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/build/constraint"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildTag is the build tag of guest test files ("//go:build vmtest").
const BuildTag = "vmtest"

// ModuleRoot returns the directory of the main module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("vmtest: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("vmtest: not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("vmtest: go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// BuildTest compiles pkg's tests for the guest (CGO_ENABLED=0, tag vmtest)
// into the binary out. dir is where the go command runs (the module root).
func BuildTest(ctx context.Context, dir, pkg, out string) error {
	return goCmd(ctx, dir, "test", "-c", "-tags", BuildTag, "-o", out, pkg)
}

// BuildProgram compiles the command pkg for the guest into out.
func BuildProgram(ctx context.Context, dir, pkg, out string) error {
	return goCmd(ctx, dir, "build", "-tags", BuildTag, "-o", out, pkg)
}

// Package is a package with guest tests.
type Package struct {
	ImportPath string
	Dir        string // absolute
	Rel        string // relative to the module root, slash-separated
}

// GuestPackages lists the module's packages that have test files
// constrained by the vmtest build tag.
func GuestPackages(ctx context.Context, root string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-tags", BuildTag, "-f",
		`{{.ImportPath}}|{{.Dir}}|{{join .TestGoFiles ","}},{{join .XTestGoFiles ","}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("vmtest: go list: %w\n%s", err, stderr.Bytes())
	}
	var pkgs []Package
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			continue
		}
		for _, f := range strings.Split(parts[2], ",") {
			if f == "" {
				continue
			}
			if ok, err := hasTag(filepath.Join(parts[1], f), BuildTag); err != nil {
				return nil, err
			} else if ok {
				rel, _ := filepath.Rel(root, parts[1])
				pkgs = append(pkgs, Package{ImportPath: parts[0], Dir: parts[1], Rel: filepath.ToSlash(rel)})
				break
			}
		}
	}
	return pkgs, nil
}

// hasTag reports whether the file's //go:build line mentions tag.
func hasTag(file, tag string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") && !constraint.IsGoBuild(line) {
			continue
		}
		if !constraint.IsGoBuild(line) {
			return false, nil // past the header
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return false, fmt.Errorf("%s: %w", file, err)
		}
		found := false
		expr.Eval(func(t string) bool {
			found = found || t == tag
			return true
		})
		return found, nil
	}
	return false, sc.Err()
}

// AddHostProgram adds the host's program name (found in PATH) and the
// shared libraries ldd names for it to a guest's Files, under the same
// paths, so that a benchmark can run a tool the guest lacks (strace).
func AddHostProgram(files map[string]string, name string) error {
	bin, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("vmtest: %s is needed on the host: %w", name, err)
	}
	files["/usr/bin/"+name] = bin
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return fmt.Errorf("vmtest: ldd %s: %w", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		// "libx.so => /lib/.../libx.so (0x...)"; the loader and vdso are
		// the guest's own.
		if len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/") {
			if _, ok := files[f[2]]; !ok {
				files[f[2]] = f[2]
			}
		}
	}
	return nil
}

// BuildRevision builds the command pkg as it was at the git revision rev
// of the repository at root into out, for benchmarks that compare a
// change with what it changes in one run: the revision's tree is
// exported into dir (which must not exist) and built there.
func BuildRevision(ctx context.Context, root, rev, pkg, dir, out string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", rev)
	archive.Dir = root
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("vmtest: git archive %s: %w", rev, err)
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("vmtest: unpacking %s: %w", rev, err)
	}
	return BuildProgram(ctx, dir, pkg, out)
}
