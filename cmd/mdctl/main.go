// Command mdctl inspects and manages Linux MD software RAID arrays.
//
// Each subcommand is a struct in its own file with a Run method; main only
// parses the command line, builds the one md.Manager (from the global
// flags) and the one context (cancelled by SIGINT or SIGTERM) that
// commands receive, and runs the selected command.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
)

// Globals are the flags every command takes.
type Globals struct {
	Sysfs    string      `name:"sysfs" default:"/sys" placeholder:"DIR" help:"Where sysfs is mounted (a capture's; needs --dev)."`
	Dev      string      `name:"dev" default:"/dev" placeholder:"DIR" help:"The device directory."`
	RunDir   string      `name:"run-dir" default:"/run/mdraid" placeholder:"DIR" help:"Where the per-array lock files (and the notes of interrupted replaces) live."`
	MapDir   string      `name:"map-dir" default:"/run/mdadm" placeholder:"DIR" help:"Where mdadm's map file is, which assemble, incremental and stop keep as mdadm does (status --export reads MD_DEVNAME from it)."`
	HomeHost string      `name:"homehost" placeholder:"NAME" help:"The homehost that decides which arrays are local (default: the host name)."`
	Proc     string      `name:"proc" default:"/proc" placeholder:"DIR" help:"Where procfs is mounted (stop reads the swap table and every process's open descriptors)."`
	Version  versionFlag `name:"version" short:"V" help:"Print the version and exit."`
}

// versionFlag is --version (-V). It does what kong.VersionFlag does, print
// the version and exit 0, but reads the build information only when it
// is given: kong.VersionFlag takes the version from a kong variable,
// which had every start call debug.ReadBuildInfo (it parses the build
// information anew each time) and interpolate that variable into every
// flag, about 40 % of building and parsing the command line for
// `mdctl status` (docs/performance.md §3).
type versionFlag bool

// BeforeReset prints the version and exits 0.
func (versionFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprintln(app.Stdout, version())
	app.Exit(0)
	return nil
}

// CLI is the command line.
type CLI struct {
	Globals

	Status      StatusCmd      `cmd:"" help:"Show the health of every md array (or the named ones), like mdadm --detail --test."`
	Examine     ExamineCmd     `cmd:"" help:"Show the md superblock of member devices or images, like mdadm --examine."`
	Create      CreateCmd      `cmd:"" help:"Create an array on blank, unused devices, with mdadm --create's flags and layout; never writes a disk that holds anything."`
	ZeroSuper   ZeroCmd        `cmd:"" name:"zero-superblock" help:"Erase the md superblock (and its bitmap and logs) of devices no array uses, as mdadm --zero-superblock; nothing else."`
	Replace     ReplaceCmd     `cmd:"" help:"Put a blank disk into exactly one slot of an array: never grows it, never writes a disk that holds anything."`
	Fail        FailCmd        `cmd:"" help:"Mark a member faulty, unless the array would not survive it."`
	Remove      RemoveCmd      `cmd:"" help:"Remove a faulty member or a spare from an array."`
	Set         SetCmd         `cmd:"" help:"Set or clear a member's write-mostly or failfast flag (kept in its superblock)."`
	ReAdd       ReAddCmd       `cmd:"" name:"re-add" help:"Put a former member back into its own slot (mdadm --re-add): with a bitmap only what changed is copied."`
	Bitmap      BitmapCmd      `cmd:"" help:"Add or remove the internal write-intent bitmap of a running array (mdadm --grow --bitmap=)."`
	Grow        GrowCmd        `cmd:"" help:"Use the space every member has (--size=max, after bigger disks) or a given size, as mdadm --grow --size; never changes the number of members."`
	Run         RunCmd         `cmd:"" help:"Start an assembled, inactive array with the members it has (last resort)."`
	Assemble    AssembleCmd    `cmd:"" help:"Assemble arrays from their superblocks, with no configuration: every array with --scan, as udev does at boot."`
	Incremental IncrementalCmd `cmd:"" help:"Add one device to its array and start the array when complete, as udev's mdadm --incremental."`
	Stop        StopCmd        `cmd:"" help:"Stop arrays, as mdadm --stop does; refuses one that is mounted, held, used as swap or open, naming who."`
	Record      RecordCmd      `cmd:"" help:"Record the slots (ports and disks) of healthy arrays, for heal."`
	Check       CheckCmd       `cmd:"" help:"Check (scrub) or repair arrays: time-boxed and resumable with --duration and --store."`
	Heal        HealCmd        `cmd:"" help:"One pass: put a blank disk found in a missing member's recorded port into its slot."`
	Wait        WaitCmd        `cmd:"" help:"Wait until no resync, recovery, reshape or check runs on arrays (mdadm -W)."`
	Watch       WatchCmd       `cmd:"" help:"Report array events as the kernel signals them (like mdadm --monitor); optionally record and heal."`
	Completion  CompletionCmd  `cmd:"" help:"Print the shell code that enables completion for mdctl (bash, zsh or fish)."`
	Help        HelpCmd        `cmd:"" help:"Show help for mdctl or for one command."`
	VersionCmd  VersionCmd     `cmd:"" name:"version" help:"Print the version."`
}

// version is the module version and VCS revision the binary was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok)
}

// versionOf is version for the build information bi (ok false when the
// binary carries none): the module version, or when the module was built
// from a work tree ("(devel)") the VCS revision, then the Go version.
func versionOf(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "mdctl (unknown version)"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	switch {
	case (v == "" || v == "(devel)") && rev != "":
		v = rev + dirty
	case v == "":
		v = "(devel)"
	}
	return "mdctl " + v + " " + bi.GoVersion
}

// quietExit is returned by a command whose exit status is its answer (as
// with mdadm --detail --test): main exits with code and prints nothing.
type quietExit struct{ code int }

func (e *quietExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// ExitCode implements kong.ExitCoder.
func (e *quietExit) ExitCode() int { return e.code }

// checkIDs refuses to run set-user-ID or set-group-ID: mdctl takes
// --sysfs, --dev, --store and --run-dir from whoever runs it, which in a
// setuid binary would let any user make root read and write files of
// their choosing.
func checkIDs(uid, euid, gid, egid int) error {
	if uid != euid || gid != egid {
		return fmt.Errorf("refusing to run set-user-ID or set-group-ID (real uid %d, effective uid %d, real gid %d, effective gid %d): run mdctl as root instead, for example through sudo", uid, euid, gid, egid)
	}
	return nil
}

// run parses args and runs the command; it returns the exit code.
func run(args []string, stdout, stderr io.Writer, exit func(int)) int {
	return runAt(args, stdout, stderr, exit, nil)
}

// runAt is run with the clock that dates reports (md.Config.Now; nil for
// time.Now): tests pin it. Its zone is the local time zone examine prints
// times in (time.Local when nil).
func runAt(args []string, stdout, stderr io.Writer, exit func(int), now func() time.Time) int {
	if err := checkIDs(os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()); err != nil {
		fmt.Fprintf(stderr, "mdctl: error: %v\n", err)
		return 1
	}
	var cli CLI
	line := os.Getenv("COMP_LINE")
	modelArgs := args
	if line != "" {
		modelArgs = nil // completion walks every command
	}
	parser, err := parserFor(&cli, modelArgs, kong.Writers(stdout, stderr), kong.Exit(exit))
	if err != nil {
		panic(err) // a malformed CLI struct: a programming error
	}
	if line != "" {
		// The shell asks for completions (see CompletionCmd); building
		// the completion model costs start-up time otherwise.
		completeLine(parser, line, exit)
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		// One line on stderr, nothing on stdout: a mistyped flag in
		// `mdctl status --format=prometheus > f.tmp` or `... --json | jq`
		// must not fill the file or the pipe with help.
		fmt.Fprintf(stderr, "mdctl: error: %s\n", escape.Text(usageLine(err, args)))
		return exitUsage
	}
	if err := checkRoots(ctx); err != nil {
		fmt.Fprintf(stderr, "mdctl: error: %v\n", err)
		return exitUsage
	}
	// One context for every command: SIGINT or SIGTERM cancels it, and
	// a second signal ends mdctl as it did before.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-sigCtx.Done(); stop() }()
	ctx.BindTo(sigCtx, (*context.Context)(nil))
	zone := time.Local
	if now != nil {
		zone = now().Location()
	}
	ctx.Bind(zone)
	// One Manager, built only for the commands that take one (examine
	// and completion read no system and take any --sysfs).
	var (
		once   sync.Once
		mgr    *md.Manager
		mgrErr error
	)
	open := func() (*md.Manager, error) {
		once.Do(func() { mgr, mgrErr = openManager(ctx, &cli.Globals, now) })
		return mgr, mgrErr
	}
	if err := ctx.BindSingletonProvider(open); err != nil {
		panic(err) // a malformed provider: a programming error
	}
	// status opens it itself: it reports a system it cannot open in
	// its own format.
	ctx.Bind(openFunc(open))
	if now == nil {
		now = time.Now
	}
	ctx.Bind(clock(now))
	err = ctx.Run(&cli.Globals)
	var q *quietExit
	if errors.As(err, &q) {
		return q.code
	}
	if err != nil {
		// Errors can quote names from disks: escaped, lines kept.
		parser.Errorf("%s", escape.Lines(err.Error()))
		var coder interface{ ExitCode() int }
		if errors.As(err, &coder) {
			return coder.ExitCode()
		}
		return 1
	}
	return 0
}

// habits are mdadm's spellings of mdctl's commands, for the hint of a
// usage error.
var habits = map[string]string{
	"detail": "status", "--detail": "status", "-D": "status", "--query": "status", "-Q": "status",
	"--examine": "examine", "-E": "examine", "--assemble": "assemble", "-A": "assemble",
	"--incremental": "incremental", "-I": "incremental", "--stop": "stop", "-S": "stop",
	"--run": "run", "-R": "run", "--monitor": "watch", "--follow": "watch", "-F": "watch",
	"--fail": "fail", "--remove": "remove", "--replace": "replace", "--add": "replace",
	"--zero-superblock": "zero-superblock", "--create": "create", "-C": "create",
}

// usageLine is the one line a usage error prints: kong's error (which
// names a close flag: "did you mean"), a hint for mdadm's spelling of a
// command, and where the usage is shown.
func usageLine(err error, args []string) string {
	msg := err.Error()
	help := "mdctl --help"
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		if n := pe.Context.Selected(); n != nil {
			help = "mdctl " + n.Name + " --help"
		}
	}
	if len(args) > 0 && help == "mdctl --help" {
		if cmd, ok := habits[args[0]]; ok {
			msg, _, _ = strings.Cut(msg, ", did you mean") // kong's guess among flags
			msg += fmt.Sprintf("; did you mean mdctl %s?", cmd)
		}
	}
	return msg + " (" + help + " shows the usage)"
}

// checkRoots refuses --sysfs without --dev (a usage error): a capture's
// sysfs read with this host's /dev would name the host's disks as the
// capture's members.
func checkRoots(ctx *kong.Context) error {
	var sys, dev bool
	for _, p := range ctx.Path {
		if p.Flag == nil {
			continue
		}
		switch p.Flag.Name {
		case "sysfs":
			sys = true
		case "dev":
			dev = true
		}
	}
	if sys && !dev {
		return errors.New("--sysfs needs --dev: the device directory that goes with that sysfs (--dev /dev for this host's)")
	}
	return nil
}

// openFunc opens the one Manager (main's provider), for the commands
// that handle its failure themselves.
type openFunc func() (*md.Manager, error)

// clock is the clock that dates reports (md.Config.Now).
type clock func() time.Time

// openManager builds the Manager from the global flags. A system that
// cannot be opened exits 1, or 4 for status (as mdadm --detail --test).
func openManager(k *kong.Context, g *Globals, now func() time.Time) (*md.Manager, error) {
	m, err := md.Open(&md.Config{SysRoot: g.Sysfs, DevRoot: g.Dev, RunDir: g.RunDir, ProcRoot: g.Proc, Now: now,
		MapDir: g.MapDir, HomeHost: g.HomeHost, NoUdev: os.Getenv("MDADM_NO_UDEV") == "1"})
	if err != nil {
		code := exitFailure
		if n := k.Selected(); n != nil && n.Name == "status" {
			code = exitUnreadable
		}
		return nil, &exitError{code: code, msg: err.Error()}
	}
	return m, nil
}

// printLine prints one line of text output, escaped (escape.Text): the
// values in it may come from disks.
func printLine(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, escape.Text(fmt.Sprintf(format, args...)))
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Exit))
}
