// Package controller is a small node controller built on go-mdraid's
// public API only, as a Talos-style node OS would build one: it turns
// every md array into a resource (its health and slots), records healthy
// arrays' slots, and on each event of md/watch reads the arrays again
// and runs a heal pass in dry-run mode on the degraded ones, publishing
// what heal would do. It is the README's "library in 10 lines" grown to
// a page, and its test runs it against md/mdtest.
//
// It lives in its own module (with a replace directive to the
// repository root), so that CI proves the public API is enough.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/watch"
)

// Resource is the controller's view of one array.
type Resource struct {
	ID           string // the array UUID, or its kernel name when it has none
	Device       string // kernel name ("md127")
	Name         string // array name ("boot")
	Level        string
	Availability md.Availability
	Redundancy   md.Redundancy
	Sync         string   // what the sync thread does ("idle", "recover", ...)
	Slots        []string // per slot: "active vda", "missing", ...
	Errors       []string // what md could not read about the array
	// Heal is what a heal pass would do for the array, as dry-run
	// decisions (empty unless the array is degraded).
	Heal []HealPlan
}

// HealPlan is one heal decision, for a resource.
type HealPlan struct {
	Slot    int
	Port    string // the recorded by-path identity
	Disk    string // kernel name of the disk found there
	Outcome md.Outcome
	Refused bool // errors.Is(err, md.ErrRefused): a disk or state md will not touch
	Reason  string
}

// Config is what Run needs.
type Config struct {
	Manager *md.Manager
	Store   md.Store // slot records; md/store.File on a node
	Mdstat  string   // /proc/mdstat, or md/mdtest's System.Mdstat
	Rescan  time.Duration
	Logger  *slog.Logger
	// Publish receives every array's resource after each reconcile,
	// sorted by Device. It is called from Run's goroutine.
	Publish func([]Resource)
}

// Run watches the arrays until ctx is done: it reconciles once the
// watcher has taken its first snapshot, and again after every event. It returns ctx's error, or the
// error of starting the watch.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ready := make(chan struct{})
	events, err := watch.Start(ctx, cfg.Manager, &watch.Options{
		Store:  cfg.Store, // the watcher records healthy arrays
		Mdstat: cfg.Mdstat,
		Rescan: cfg.Rescan,
		Logger: log,
		Ready:  func() { close(ready) },
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	// The first reconcile waits for the watcher's first snapshot: the
	// healthy arrays are recorded by then, so heal has their records.
	select {
	case <-ready:
	case <-ctx.Done():
		for range events {
		}
		return ctx.Err()
	}
	reconcile := func() {
		rs, err := Reconcile(ctx, cfg.Manager, cfg.Store)
		if err != nil {
			log.Error("reconcile", "err", err)
			return
		}
		cfg.Publish(rs)
	}
	reconcile()
	for e := range events {
		log.Info("md event", "event", e.String())
		reconcile()
	}
	return ctx.Err()
}

// Reconcile reads every array once and returns its resources, with heal's
// dry-run decisions for the degraded ones. An array md could not read
// fully is still a resource, with its Errors.
func Reconcile(ctx context.Context, m *md.Manager, st md.Store) ([]Resource, error) {
	report, err := m.Discover(ctx)
	if err != nil {
		return nil, err
	}
	var out []Resource
	for _, a := range report.Arrays {
		r := Resource{ID: a.UUID, Device: a.Device, Name: a.Name, Level: a.Level,
			Availability: a.Availability, Redundancy: a.Redundancy,
			Sync: string(a.Activity.Kind), Errors: a.Errors}
		if r.ID == "" {
			r.ID = a.Device
		}
		for _, s := range a.Slots {
			if s.Member != nil {
				r.Slots = append(r.Slots, fmt.Sprintf("%s %s", s.State, s.Member.Device))
			} else {
				r.Slots = append(r.Slots, string(s.State))
			}
		}
		if a.Availability == md.Degraded {
			ds, err := m.PlanHeal(ctx, md.HealOptions{Store: st, Array: a.Device, Report: report})
			if err != nil {
				r.Errors = append(r.Errors, "heal: "+err.Error())
			}
			for _, d := range ds {
				r.Heal = append(r.Heal, HealPlan{Slot: d.Slot, Port: d.ByPath, Disk: d.Device,
					Outcome: d.Outcome, Refused: isRefused(d.Err), Reason: d.Reason})
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out, nil
}
