package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/superblock"
)

// CreateCmd is `mdctl create`, with mdadm --create's flag names. The
// homehost written before the name is the global --homehost (which may
// follow the command, as mdadm's does).
type CreateCmd struct {
	Array       string   `arg:"" help:"The array to create: /dev/md/NAME, /dev/mdN or NAME."`
	Devices     []string `arg:"" help:"The member devices in slot order; 'missing' leaves a slot empty (a degraded array)."`
	Level       string   `short:"l" required:"" help:"RAID level: 0, 1, 4, 5, 6 or 10 (also raid1, mirror, stripe)."`
	RaidDevices int      `name:"raid-devices" short:"n" required:"" help:"Number of slots."`
	Metadata    string   `short:"e" default:"1.2" help:"Superblock version: 0.90, 1.0, 1.1 or 1.2."`
	Name        string   `short:"N" help:"Array name (default: taken from ARRAY)."`
	Bitmap      string   `short:"b" enum:"internal,none" default:"none" help:"Write-intent bitmap: internal or none."`
	Chunk       uint64   `short:"c" help:"Chunk size in KiB (levels 0, 4, 5, 6, 10; default 512)."`
	Layout      string   `short:"p" help:"Layout (left-symmetric, ..., n2, f2, o2)."`
	Size        uint64   `short:"z" help:"Space used on each device in KiB (default: all of the smallest)."`
	AssumeClean bool     `name:"assume-clean" help:"Skip the initial resync."`
	RunFlag     bool     `name:"run" short:"R" help:"Accepted for mdadm's spelling: mdctl never asks."`
	DryRun      bool     `name:"dry-run" help:"Check as the real create does (same refusals and exit codes), print the plan, write nothing."`
	JSON        bool     `name:"json" help:"Print the plan (and with a create, what was done) as JSON."`
}

// Help is the command's exit codes, shown by --help.
func (c *CreateCmd) Help() string { return exitHelp("create") }

// parseCreateLevel reads mdadm's level spellings.
func parseCreateLevel(s string) (superblock.Level, error) {
	switch strings.ToLower(s) {
	case "mirror":
		return superblock.LevelRAID1, nil
	case "stripe":
		return superblock.LevelRAID0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(s), "raid"))
	if err != nil {
		return 0, fmt.Errorf("--level=%s: 0, 1, 4, 5, 6 or 10", s)
	}
	return superblock.Level(n), nil
}

// request is the md.CreateRequest of the command line.
func (c *CreateCmd) request() (md.CreateRequest, error) {
	lv, err := parseCreateLevel(c.Level)
	if err != nil {
		return md.CreateRequest{}, err
	}
	v, err := superblock.ParseVersion(c.Metadata)
	if err != nil {
		return md.CreateRequest{}, fmt.Errorf("--metadata=%s: %w", c.Metadata, err)
	}
	return md.CreateRequest{Array: c.Array, Level: lv, RaidDevices: c.RaidDevices, Metadata: v,
		Name: c.Name, Bitmap: c.Bitmap, ChunkKiB: c.Chunk, Layout: c.Layout,
		AssumeClean: c.AssumeClean, SizeKiB: c.Size, Devices: c.Devices}, nil
}

// Validate checks the flags that need no facts.
func (c *CreateCmd) Validate() error {
	_, err := c.request()
	return err
}

// Run plans the create (md.Manager.PlanCreate) or carries it out
// (md.Manager.Create): exit 2 for a refusal (nothing written), 3 for a
// failure after a write (the message says what was left), 1 otherwise.
func (c *CreateCmd) Run(ctx context.Context, k *kong.Context, m *md.Manager) error {
	req, err := c.request()
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	if c.DryRun {
		p, err := m.PlanCreate(ctx, req)
		if err != nil {
			return &exitError{code: createCode(err), msg: err.Error()}
		}
		if c.JSON {
			return printCreateJSON(k, struct {
				Plan   *md.CreatePlan `json:"plan"`
				DryRun bool           `json:"dry_run"`
			}{p, true})
		}
		printLine(k.Stdout, "mdctl: would create %s: %s, %d devices, metadata %v, name %s; nothing written (dry run)",
			c.Array, p.Level, c.RaidDevices, p.Version, p.Name)
		for _, ch := range p.Checks {
			printLine(k.Stdout, "  check %s: %s", ch.Name, ch.Detail)
		}
		return nil
	}
	res, err := m.Create(ctx, req)
	if err != nil {
		return &exitError{code: createCode(err), msg: err.Error()}
	}
	if c.JSON {
		return printCreateJSON(k, res)
	}
	printLine(k.Stdout, "mdctl: created %s (%s) as %s, metadata %v", res.Path, res.Array, res.Plan.Level, res.Plan.Version)
	return nil
}

func printCreateJSON(k *kong.Context, v any) error { return printJSON(k.Stdout, v) }

// createCode is the exit code of a Create or PlanCreate error.
func createCode(err error) int {
	var ce *md.CreateError
	switch {
	case errors.As(err, &ce):
		return exitPartial
	case errors.Is(err, md.ErrRefused), errors.Is(err, md.ErrPlanChanged):
		return exitRefused
	}
	return exitFailure
}
