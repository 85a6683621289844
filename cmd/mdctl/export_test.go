package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	qt "github.com/frankban/quicktest"
	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/internal/fixture"
	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/superblock"
)

// captureMap writes, in dir, the map file mdadm kept on the system the
// capture fc was taken on, as far as its detail-export.txt tells it: an
// entry /dev/md/MD_DEVNAME for the array when mdadm printed one.
func captureMap(t *testing.T, fc *fixture.Case, dir string) {
	t.Helper()
	keys := keyMap(fc.Texts["detail-export.txt"])
	name, ok := keys["MD_DEVNAME"]
	if !ok {
		return
	}
	u, err := uuid.Parse(strings.ReplaceAll(keys["MD_UUID"], ":", ""))
	qt.Assert(t, err, qt.IsNil)
	sb := &superblock.Superblock{SetUUID: u, Version: superblock.Version12}
	if keys["MD_METADATA"] == "0.90" {
		sb.Version = superblock.Version090
	}
	e := mapfile.Entry{Dev: fc.Info.Array, Metadata: keys["MD_METADATA"], UUID: mapfile.UUIDText(sb), Path: "/dev/md/" + name}
	qt.Assert(t, mapfile.Map{Dir: dir}.Write([]mapfile.Entry{e}), qt.IsNil)
}

// keyMap parses KEY=VALUE lines.
func keyMap(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// sortedLines returns the non-empty lines of s, sorted.
func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// TestStatusExportMatchesCaptures compares status --export with the
// mdadm --detail --export that was captured with each fixture (mdadm
// 4.2, Linux 6.1 and 7.2), key by key, given the map file mdadm had. The
// one difference allowed is MD_RESHAPE_ACTIVE, which mdadm prints only
// since 4.5: mdctl prints it, False for every capture.
func TestStatusExportMatchesCaptures(t *testing.T) {
	for _, fc := range fixture.All(t) {
		name := filepath.Base(fc.Dir)
		t.Run(name, func(t *testing.T) {
			c := qt.New(t)
			flags, fc := goldenCase(t, name)
			captureMap(t, fc, "map")
			code, out, errOut := runCLI(t, append([]string{"status", "--export", fc.Info.Array, "--map-dir", "map"}, flags...)...)
			c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
			c.Check(errOut, qt.Equals, "")
			// The capture's /dev is dev here.
			got := strings.ReplaceAll(out, "=dev/", "=/dev/")
			g := sortedLines(got)
			c.Check(g, qt.Contains, "MD_RESHAPE_ACTIVE=False")
			g = slicesWithout(g, "MD_RESHAPE_ACTIVE=False")
			c.Check(g, qt.DeepEquals, sortedLines(fc.Texts["detail-export.txt"]), qt.Commentf("mdctl:\n%s", out))

			// --no-devices: the same without the MD_DEVICE_ keys.
			code, nd, _ := runCLI(t, append([]string{"status", "--export", "--no-devices", fc.Info.Array, "--map-dir", "map"}, flags...)...)
			c.Assert(code, qt.Equals, 0)
			var want []string
			for _, l := range strings.Split(out, "\n") {
				if l != "" && !strings.HasPrefix(l, "MD_DEVICE_") {
					want = append(want, l)
				}
			}
			c.Check(strings.Split(strings.TrimSuffix(nd, "\n"), "\n"), qt.DeepEquals, want)
		})
	}
}

func slicesWithout(lines []string, l string) []string {
	var out []string
	for _, x := range lines {
		if x != l {
			out = append(out, x)
		}
	}
	return out
}

// TestGoldenExport pins examine --export over every member and status
// --export of the array (with the capture's map) for every capture.
func TestGoldenExport(t *testing.T) {
	gd := filepath.Join(goldenDir(t), "export")
	for _, fc := range fixture.All(t) {
		name := filepath.Base(fc.Dir)
		t.Run(name, func(t *testing.T) {
			flags, fc := goldenCase(t, name)
			captureMap(t, fc, "map")
			wd, err := os.Getwd()
			qt.Assert(t, err, qt.IsNil)
			fix := func(s string) string { return strings.ReplaceAll(s, wd+string(filepath.Separator), "") }
			args := append([]string{"examine", "--export"}, flags...)
			for _, m := range fc.Members {
				args = append(args, filepath.Join("dev", m.Name))
			}
			base := filepath.Join(gd, name)
			goldenRun(t, base, ".examine", fix, args...)
			goldenRun(t, base, ".detail", nil, append([]string{"status", "--export", fc.Info.Array, "--map-dir", "map"}, flags...)...)
		})
	}
}

// TestExamineExportMatchesExamine checks examine --export against the
// mdadm --examine text captured for every member: the same UUIDs,
// events, level, devices and name.
func TestExamineExportMatchesExamine(t *testing.T) {
	field := func(text, label string) string {
		m := regexp.MustCompile(`(?m)^ *` + regexp.QuoteMeta(label) + ` : (.*)$`).FindStringSubmatch(text)
		if m == nil {
			return ""
		}
		return strings.TrimSpace(m[1])
	}
	for _, fc := range fixture.All(t) {
		name := filepath.Base(fc.Dir)
		t.Run(name, func(t *testing.T) {
			_, dev := fc.System(t)
			for _, m := range fc.Members {
				c := qt.New(t)
				code, out, errOut := runCLI(t, "examine", "--export", filepath.Join(dev, m.Name))
				c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
				k := keyMap(out)
				ex := m.Examine
				c.Check(k["MD_LEVEL"], qt.Equals, field(ex, "Raid Level"), qt.Commentf("%s", m.Name))
				c.Check(k["MD_DEVICES"], qt.Equals, field(ex, "Raid Devices"))
				c.Check(k["MD_EVENTS"], qt.Equals, field(ex, "Events"))
				if u := field(ex, "Array UUID"); u != "" { // 1.x
					c.Check(k["MD_UUID"], qt.Equals, u)
					c.Check(k["MD_DEV_UUID"], qt.Equals, field(ex, "Device UUID"))
					n, _, _ := strings.Cut(field(ex, "Name"), " ")
					c.Check(k["MD_NAME"], qt.Equals, n)
				} else {
					u, _, _ := strings.Cut(field(ex, "UUID"), " ") // "(local to host x)"
					c.Check(k["MD_UUID"], qt.Equals, u)
					c.Check(k["MD_NAME"], qt.Equals, "")
				}
				if s := field(ex, "Array Size"); s != "" && k["MD_ARRAY_SIZE"] != "" {
					// "130048 KiB (127.00 MiB 133.17 MB)": the JEDEC figure.
					c.Check(s, qt.Contains, " "+strings.TrimSuffix(k["MD_ARRAY_SIZE"], "MB")+" MB)")
				}
			}
		})
	}
}

// fixtureSuperblock returns the superblock of the first member of the
// capture name.
func fixtureSuperblock(t *testing.T, name string) *superblock.Superblock {
	t.Helper()
	fc := fixture.Named(t, name)
	_, dev := fc.System(t)
	rep := examine.InspectPath(filepath.Join(dev, fc.Members[0].Name))
	qt.Assert(t, rep.Status, qt.Equals, examine.OK)
	return rep.Superblock().Clone()
}

// TestExamineExportHostile: values from the disk that udev would
// misread, or that SafeName refuses, are never printed; an unknown level
// prints no MD_LEVEL; the 0.90 quirks are mdadm's.
func TestExamineExportHostile(t *testing.T) {
	v1 := fixtureSuperblock(t, "boot-mirror")
	name := func(s string) *superblock.Superblock {
		sb := v1.Clone()
		sb.SetName = [32]byte{}
		copy(sb.SetName[:], s)
		return sb
	}
	tests := []struct {
		name string
		sb   *superblock.Superblock
		want string // the MD_NAME line, "" for none
		warn string // substring of a warning, "" for none
	}{
		{"plain", name("talos:boot"), "MD_NAME=talos:boot", ""},
		{"empty", name(""), "", ""},
		{"newline ends it", name("host:a\nMD_LEVEL=evil"), "MD_NAME=host:a", ""},
		{"newline first", name("\nMD_UUID=0"), "", ""},
		{"space rewritten", name("my name"), "MD_NAME=my_name", ""},
		{"slash rewritten", name("a/b"), "MD_NAME=a-b", ""},
		{"leading space", name(" x"), "MD_NAME=_x", ""},
		{"quote", name(`"x"`), "", "MD_NAME left out"},
		{"single quote", name(`'x`), "", "MD_NAME left out"},
		{"dollar", name("$(reboot)"), "", "MD_NAME left out"},
		{"backslash", name(`a\x`), "", "MD_NAME left out"},
		{"control byte", name("a\x1bb"), "", "MD_NAME left out"},
		{"carriage return", name("a\rb"), "", "MD_NAME left out"},
		{"leading dash", name("-rf"), "", "MD_NAME left out"},
		{"not utf-8", name("a\xffb"), "", "MD_NAME left out"},
		{"dot dot", name(".."), "", "MD_NAME left out"},
		{"32 bytes", name("0123456789abcdef0123456789abcdef"), "MD_NAME=0123456789abcdef0123456789abcdef", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			lines, warns := examineExportLines(tt.sb)
			var got string
			for _, l := range lines {
				// Every line is one KEY=VALUE that udev reads back as
				// printed.
				k, v, ok := strings.Cut(l, "=")
				c.Check(ok && regexp.MustCompile(`^MD_[A-Z_]+$`).MatchString(k), qt.IsTrue, qt.Commentf("%q", l))
				c.Check(v != "" && strings.TrimSpace(v) == v && !strings.ContainsAny(v, "\"'\n\r\x00\\$"), qt.IsTrue, qt.Commentf("%q", l))
				if k == "MD_NAME" {
					got = l
				}
			}
			c.Check(got, qt.Equals, tt.want)
			if tt.warn == "" {
				c.Check(warns, qt.HasLen, 0)
			} else {
				c.Check(strings.Join(warns, "\n"), qt.Contains, tt.warn)
			}
		})
	}

	t.Run("unknown level", func(t *testing.T) {
		sb := v1.Clone()
		sb.Level = 3
		lines, warns := examineExportLines(sb)
		qt.Check(t, strings.Join(lines, "\n"), qt.Not(qt.Contains), "MD_LEVEL")
		qt.Check(t, strings.Join(lines, "\n"), qt.Not(qt.Contains), "MD_ARRAY_SIZE")
		qt.Check(t, strings.Join(warns, "\n"), qt.Contains, "unknown level 3")
	})
	t.Run("raid10 with a zero layout", func(t *testing.T) {
		sb := v1.Clone()
		sb.Level, sb.Layout = superblock.LevelRAID10, 0 // mdadm divides by zero
		lines, _ := examineExportLines(sb)
		qt.Check(t, strings.Join(lines, "\n"), qt.Not(qt.Contains), "MD_ARRAY_SIZE")
		qt.Check(t, lines[0], qt.Equals, "MD_LEVEL=raid10")
	})
	t.Run("huge size", func(t *testing.T) {
		sb := v1.Clone()
		sb.Size = 1 << 60
		lines, _ := examineExportLines(sb)
		qt.Check(t, strings.Join(lines, "\n"), qt.Not(qt.Contains), "MD_ARRAY_SIZE")
	})
	t.Run("raid_disks printed signed", func(t *testing.T) {
		sb := v1.Clone()
		sb.RaidDisks = 0xffffffff
		lines, _ := examineExportLines(sb)
		qt.Check(t, lines[1], qt.Equals, "MD_DEVICES=-1")
	})
	t.Run("utime low 40 bits", func(t *testing.T) {
		sb := v1.Clone()
		sb.UTime = 0xabcdef<<40 | 1234567890
		lines, _ := examineExportLines(sb)
		qt.Check(t, lines, qt.Contains, "MD_UPDATE_TIME=1234567890")
	})

	v090 := fixtureSuperblock(t, "raid1-v0.90")
	t.Run("0.90 prints ctime as the update time", func(t *testing.T) {
		sb := v090.Clone()
		sb.CTime, sb.UTime = 1111, 2222
		lines, _ := examineExportLines(sb)
		qt.Check(t, lines, qt.DeepEquals, []string{
			"MD_LEVEL=raid1", "MD_DEVICES=2", "MD_UUID=" + mapfile.Groups(sb.SetUUID),
			"MD_UPDATE_TIME=1111", fmt.Sprintf("MD_EVENTS=%d", sb.Events)})
	})
	t.Run("0.90 before minor 90: one UUID word", func(t *testing.T) {
		sb := v090.Clone()
		sb.MinorVersion = 0
		lines, _ := examineExportLines(sb)
		qt.Check(t, lines[2], qt.Equals, "MD_UUID="+mapfile.Groups(sb.SetUUID)[:8])
	})
}

// TestJEDEC pins mdadm's human_size_brief(JEDEC) arithmetic.
func TestJEDEC(t *testing.T) {
	for _, tt := range []struct {
		bytes int64
		want  string
	}{
		{0, ""},
		{5000*1024 - 1, ""},
		{5000 * 1024, "5.12MB"},
		{67043328, "67.04MB"},     // boot-mirror: 65472 KiB
		{5004999, ""},             // below 5000 KiB
		{5125000, "5.13MB"},       // half a centi-MB rounds up
		{5124999, "5.12MB"},       // just below
		{2<<30 - 1, "2147.48MB"},  // the last MB figure
		{2 << 30, "2.15GB"},       // the first GB figure
		{2<<40 - 1, "2199.02GB"},  // the last GB figure
		{2 << 40, "2.20TB"},       // the first TB figure
		{16 << 40, "17.59TB"},     // 16 TiB
		{1 << 62, "4611686.02TB"}, // no overflow
		{9223372036854775807, "9223372.04TB"},
	} {
		qt.Check(t, jedec(tt.bytes), qt.Equals, tt.want, qt.Commentf("%d bytes", tt.bytes))
	}
}

// TestStatusExportUsage: --export takes one array and no other output
// flag; --no-devices needs --export; a missing array exits 4 with
// nothing on stdout.
func TestStatusExportUsage(t *testing.T) {
	flags, _ := materialize(t, "raid1-v1.2")
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"status", "--export"}, exitUsage, "exactly one array"},
		{[]string{"status", "--export", "md0", "md1"}, exitUsage, "exactly one array"},
		{[]string{"status", "--export", "--json", "md0"}, exitUsage, "cannot be combined"},
		{[]string{"status", "--export", "--format=prometheus", "md0"}, exitUsage, "cannot be combined"},
		{[]string{"status", "--export", "--store", "x.json", "md0"}, exitUsage, "cannot be combined"},
		{[]string{"status", "--no-devices", "md0"}, exitUsage, "--no-devices needs --export"},
		{[]string{"status", "--export", "md9"}, exitUnreadable, "no such array"},
		{[]string{"examine", "--export", "--json", "x"}, exitUsage, "can't be used together"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append(tt.args, flags...)...)
			qt.Check(t, code, qt.Equals, tt.code, qt.Commentf("stderr: %s", errOut))
			if !strings.Contains(out, "Usage:") { // kong shows the usage for its own errors
				qt.Check(t, out, qt.Equals, "")
			}
			qt.Check(t, errOut, qt.Contains, tt.err)
		})
	}
}

// TestStatusExportDevName: MD_DEVNAME comes from the map entry of the
// array; without one from a /dev/md/ link to the array's node; never
// from an entry that names another array, and never a name SafeName
// would change.
func TestStatusExportDevName(t *testing.T) {
	fc := fixture.Named(t, "boot-mirror")
	keys := keyMap(fc.Texts["detail-export.txt"])
	u, err := uuid.Parse(strings.ReplaceAll(keys["MD_UUID"], ":", ""))
	qt.Assert(t, err, qt.IsNil)
	good := mapfile.UUIDText(&superblock.Superblock{SetUUID: u, Version: superblock.Version10})
	other := "01234567:89abcdef:01234567:89abcdef"
	tests := []struct {
		name    string
		entry   *mapfile.Entry
		link    string // a dev/md/<link> -> ../md127
		want    string // the MD_DEVNAME line, "" for none
		warning string
	}{
		{name: "map", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: good, Path: "/dev/md/boot"}, want: "MD_DEVNAME=boot"},
		{name: "map wins over a link", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: good, Path: "/dev/md/boot"}, link: "b", want: "MD_DEVNAME=boot"},
		{name: "map names /dev/mdN", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: good, Path: "/dev/md127"}, want: ""},
		{name: "uuid not reversed is another array", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: keys["MD_UUID"], Path: "/dev/md/boot"}, want: "", warning: "names another array"},
		{name: "stale entry falls back to the link", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.2", UUID: other, Path: "/dev/md/old"}, link: "boot", want: "MD_DEVNAME=boot", warning: "names another array"},
		{name: "entry of another device", entry: &mapfile.Entry{Dev: "md126", Metadata: "1.0", UUID: good, Path: "/dev/md/boot"}, want: ""},
		{name: "unsafe map path", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: good, Path: "/dev/md/$x"}, want: "", warning: "not a safe link name"},
		{name: "map path SafeName would rewrite", entry: &mapfile.Entry{Dev: "md127", Metadata: "1.0", UUID: good, Path: "/dev/md/a/b"}, want: "", warning: "not a safe link name"},
		{name: "link only", link: "boot", want: "MD_DEVNAME=boot"},
		{name: "unsafe link ignored", link: "$x", want: ""},
		{name: "no map, no link", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := qt.New(t)
			flags, _ := goldenCase(t, "boot-mirror")
			c.Assert(os.WriteFile(filepath.Join("dev", "md127"), nil, 0o644), qt.IsNil)
			if tt.entry != nil {
				// Write the line as is: Format would refuse the unsafe
				// path, and mdadm's map may hold anything its own rules
				// let through.
				c.Assert(os.MkdirAll("map", 0o755), qt.IsNil)
				line := fmt.Sprintf("%s %s %s %s\n", tt.entry.Dev, tt.entry.Metadata, tt.entry.UUID, tt.entry.Path)
				c.Assert(os.WriteFile(filepath.Join("map", "map"), []byte(line), 0o600), qt.IsNil)
			}
			if tt.link != "" {
				c.Assert(os.MkdirAll(filepath.Join("dev", "md"), 0o755), qt.IsNil)
				c.Assert(os.Symlink("../md127", filepath.Join("dev", "md", tt.link)), qt.IsNil)
			}
			code, out, errOut := runCLI(t, append([]string{"status", "--export", "--no-devices", "md127", "--map-dir", "map"}, flags...)...)
			c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
			var got string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "MD_DEVNAME=") {
					got = l
				}
			}
			c.Check(got, qt.Equals, tt.want, qt.Commentf("stdout:\n%s", out))
			c.Check(out, qt.Contains, "MD_UUID="+keys["MD_UUID"]+"\n")
			if tt.warning == "" {
				c.Check(errOut, qt.Equals, "")
			} else {
				c.Check(errOut, qt.Contains, tt.warning)
			}
		})
	}
}

// udevLine matches one key of a udev rule: KEY or KEY{attr}, an
// operator, and a double-quoted value.
var udevKey = regexp.MustCompile(`^\s*([A-Z_]+)(\{[^}]*\})?\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)`)

// udevKeys are the rule keys udev knows that the rule files may use.
var udevKeys = map[string]bool{
	"ACTION": true, "SUBSYSTEM": true, "KERNEL": true, "ENV": true, "ATTR": true, "TEST": true,
	"IMPORT": true, "GOTO": true, "LABEL": true, "SYMLINK": true, "OPTIONS": true, "RUN": true,
	"PROGRAM": true,
}

// parseRule splits a rule line into its keys, or fails.
func parseRule(line string) ([][]string, error) {
	var out [][]string
	rest := line
	for strings.TrimSpace(rest) != "" {
		m := udevKey.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("cannot parse %q", rest)
		}
		if !udevKeys[m[1]] {
			return nil, fmt.Errorf("unknown key %s", m[1])
		}
		out = append(out, []string{m[1], m[2], m[3], m[4]})
		rest = rest[len(m[0]):]
	}
	return out, nil
}

// mdctlArgs turns a program value of a rule or unit into mdctl's
// arguments, with udev's and systemd's substitutions replaced by
// examples; ok is false when the program is not mdctl.
func mdctlArgs(c *qt.C, prog string) ([]string, bool) {
	f := strings.Fields(prog)
	if len(f) == 0 || filepath.Base(f[0]) != "mdctl" {
		return nil, false
	}
	c.Check(f[0], qt.Equals, "@BINDIR@/mdctl", qt.Commentf("udev and systemd need an absolute path: scripts/install-contrib writes the installed mdctl's for @BINDIR@"))
	r := strings.NewReplacer("$devnode", "/dev/sda1", "$env{MD_DEVICE}", "md127", "$kernel", "sda1", "%i", "md127")
	var args []string
	for _, a := range f[1:] {
		args = append(args, r.Replace(a))
	}
	return args, true
}

// pendingCommands are commands the contrib files call that another part
// of issue 11 adds; once they exist the test checks them like the rest.
// (TestContribPendingExist fails for an entry whose command exists.)
var pendingCommands = map[string]bool{}

// checkMdctl parses args with mdctl's own command line model and fails
// unless the command and every flag exist.
func checkMdctl(c *qt.C, args []string) {
	var cli CLI
	parser, err := newParser(&cli, kong.Writers(io.Discard, io.Discard), kong.Exit(func(code int) { panic(fmt.Sprintf("mdctl exited %d", code)) }))
	c.Assert(err, qt.IsNil)
	known := false
	for _, n := range parser.Model.Children {
		if n.Name == args[0] {
			known = true
		}
	}
	if !known && pendingCommands[args[0]] {
		c.Logf("mdctl %s does not exist yet (pending): not checked", args[0])
		return
	}
	c.Check(known || !pendingCommands[args[0]], qt.IsTrue)
	_, err = parser.Parse(args)
	c.Check(err, qt.IsNil, qt.Commentf("mdctl %s", strings.Join(args, " ")))
}

// TestContribUdevRules: every line of the udev rules is comma-separated
// KEY{attr}OP"value" keys udev knows, every GOTO has its LABEL, and each
// mdctl the rules run parses with mdctl's own command line.
func TestContribUdevRules(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "contrib", "udev", "*.rules"))
	qt.Assert(t, err, qt.IsNil)
	qt.Assert(t, len(files), qt.Equals, 3)
	var calls []string
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c := qt.New(t)
			f, err := os.Open(file)
			c.Assert(err, qt.IsNil)
			defer f.Close()
			gotos, labels := map[string]bool{}, map[string]bool{}
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := sc.Text()
				if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
					continue
				}
				c.Check(strings.HasSuffix(line, "\\"), qt.IsFalse, qt.Commentf("line %d: no continuations", n))
				keys, err := parseRule(line)
				if !c.Check(err, qt.IsNil, qt.Commentf("%s:%d", file, n)) {
					continue
				}
				for _, k := range keys {
					switch {
					case k[0] == "GOTO":
						gotos[k[3]] = true
					case k[0] == "LABEL":
						labels[k[3]] = true
					case k[0] == "RUN" || k[0] == "PROGRAM" || k[0] == "IMPORT" && k[1] == "{program}":
						c.Check(k[2] == "=" || k[2] == "+=", qt.IsTrue, qt.Commentf("%s:%d", file, n))
						if args, ok := mdctlArgs(c, k[3]); ok {
							calls = append(calls, strings.Join(args, " "))
							checkMdctl(c, args)
						}
					}
				}
			}
			c.Assert(sc.Err(), qt.IsNil)
			for g := range gotos {
				c.Check(labels[g], qt.IsTrue, qt.Commentf("GOTO=%q has no LABEL", g))
			}
		})
	}
	// The calls the issue names are there.
	qt.Check(t, calls, qt.Contains, "incremental --export /dev/sda1")
	qt.Check(t, calls, qt.Contains, "status --export --no-devices /dev/sda1")
}

// TestContribLastResortUnits: the timer waits 30 s and conflicts with
// the md device unit; the service skips running arrays and runs mdctl
// run on the array, a command line mdctl parses.
func TestContribLastResortUnits(t *testing.T) {
	c := qt.New(t)
	read := func(name string) map[string]string {
		b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "systemd", name))
		c.Assert(err, qt.IsNil)
		out := map[string]string{}
		section := ""
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			switch {
			case l == "" || strings.HasPrefix(l, "#"):
			case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
				section = l
			default:
				k, v, ok := strings.Cut(l, "=")
				c.Assert(ok, qt.IsTrue, qt.Commentf("%s: %q", name, l))
				out[section+k] = v
			}
		}
		return out
	}
	timer := read("mdctl-last-resort@.timer")
	c.Check(timer["[Timer]OnActiveSec"], qt.Equals, "30")
	c.Check(timer["[Unit]Conflicts"], qt.Equals, "sys-devices-virtual-block-%i.device")
	c.Check(timer["[Unit]DefaultDependencies"], qt.Equals, "no")
	svc := read("mdctl-last-resort@.service")
	c.Check(svc["[Unit]ConditionPathExists"], qt.Equals, "!/sys/devices/virtual/block/%i/md/sync_action")
	c.Check(svc["[Unit]DefaultDependencies"], qt.Equals, "no")
	c.Check(svc["[Service]Type"], qt.Equals, "oneshot")
	args, ok := mdctlArgs(c, svc["[Service]ExecStart"])
	c.Assert(ok, qt.IsTrue)
	c.Check(args, qt.DeepEquals, []string{"run", "/dev/md127"})
	checkMdctl(c, args)
	// The assembly rules arm this very timer.
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "udev", "64-mdctl-raid-assembly.rules"))
	c.Assert(err, qt.IsNil)
	c.Check(string(b), qt.Contains, `ENV{SYSTEMD_WANTS}+="mdctl-last-resort@$env{MD_DEVICE}.timer"`)
}

// TestStatusExportPartition: the array rules run for partitions of an
// array too; the keys are the array's (the rules add -part%n and p%n),
// without members, as mdadm prints them for a partition.
func TestStatusExportPartition(t *testing.T) {
	c := qt.New(t)
	flags, fc := goldenCase(t, "boot-mirror")
	captureMap(t, fc, "map")
	part := filepath.Join("sys", "devices", "virtual", "block", "md127", "md127p1")
	c.Assert(os.MkdirAll(part, 0o755), qt.IsNil)
	for f, v := range map[string]string{"dev": "259:0\n", "partition": "1\n", "size": "1000\n", "uevent": "MAJOR=259\nMINOR=0\nDEVNAME=md127p1\nDEVTYPE=partition\nPARTN=1\n"} {
		c.Assert(os.WriteFile(filepath.Join(part, f), []byte(v), 0o644), qt.IsNil)
	}
	c.Assert(os.MkdirAll(filepath.Join("sys", "class", "block"), 0o755), qt.IsNil)
	c.Assert(os.Symlink("../../devices/virtual/block/md127/md127p1", filepath.Join("sys", "class", "block", "md127p1")), qt.IsNil)

	_, whole, _ := runCLI(t, append([]string{"status", "--export", "--no-devices", "md127", "--map-dir", "map"}, flags...)...)
	code, out, errOut := runCLI(t, append([]string{"status", "--export", "md127p1", "--map-dir", "map"}, flags...)...)
	c.Assert(code, qt.Equals, 0, qt.Commentf("stderr: %s", errOut))
	c.Check(out, qt.Equals, whole)
	c.Check(out, qt.Contains, "MD_DEVNAME=boot\n")
	c.Check(out, qt.Not(qt.Contains), "MD_DEVICE_")
	// A partition of something else is no array.
	code, _, _ = runCLI(t, append([]string{"status", "--export", "vda1", "--map-dir", "map"}, flags...)...)
	c.Check(code, qt.Equals, exitUnreadable)
}

// TestContribPendingExist: pendingCommands lists only commands that do
// not exist yet, so that none escapes the check once it is written.
func TestContribPendingExist(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli)
	qt.Assert(t, err, qt.IsNil)
	for _, n := range parser.Model.Children {
		qt.Check(t, pendingCommands[n.Name], qt.IsFalse, qt.Commentf("mdctl %s exists: remove it from pendingCommands", n.Name))
	}
}
