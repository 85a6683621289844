// Package promtext builds the md metrics of package md/metrics and
// writes them in the Prometheus text exposition format (version 0.0.4),
// without the Prometheus client library.
//
// The metrics, their labels and their meaning are documented in
// md/metrics, whose Collector is built on Collect. Write gives, byte for
// byte, what a client_golang registry with that Collector and expfmt's
// text encoder give (a test holds the two together, and expfmt's parser
// reads every fixture's output): families sorted by name, each with its
// HELP and TYPE lines, series sorted by their label values, labels by
// name.
//
// Why a second writer: the client library's package initialisation (its
// default registry with the Go and process collectors, the protobuf
// descriptors) and the code it links cost a short-lived program such as
// mdctl status about 11 ms of start-up and 2.4 MB of peak RSS in the
// project's test guest (docs/performance.md). A program that serves or
// prints md metrics and nothing else of Prometheus needs only this
// package; one that has its own registry registers md/metrics.Collector.
package promtext

import (
	"bufio"
	"context"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Source produces a status report; *md.Manager and *Latest are sources.
type Source interface {
	Discover(ctx context.Context) (*md.Report, error)
}

// Type is the type of a metric family.
type Type int

// The types of md metrics.
const (
	Gauge Type = iota
	Counter
)

// String returns the type's name in the text format: "gauge" or "counter".
func (t Type) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Family describes one metric family.
type Family struct {
	Name   string
	Help   string
	Type   Type
	Labels []string // label names, in the order of Metric.Values
}

// Metric is one series of a scrape.
type Metric struct {
	Family *Family
	Values []string // label values, in the order of Family.Labels
	Value  float64
}

// memberLabels returns the labels every member series has, followed by
// more.
func memberLabels(more ...string) []string {
	return append([]string{"device", "member", "slot", "by_path"}, more...)
}

func gauge(name, help string, labels ...string) *Family {
	return &Family{Name: name, Help: help, Type: Gauge, Labels: labels}
}

// schema holds every family; one is made per Collect and per Families
// call, so that nothing a caller changes is seen by another.
type schema struct {
	state, disks, disksRequired, raidDisks, degraded, blocks, blocksSynced *Family

	info, avail, red, progress, speed, eta, mismatch, lastSync, checkPos, lastCheck,
	slotMissing, slotRecorded, arrayErrors *Family

	memberInfo, memberState, memberErrors, memberEvents, memberBad *Family

	scrapeError, collectErrors *Family
}

func newSchema() *schema {
	return &schema{
		state: gauge("node_md_state",
			"Indicates the state of md-device.", "device", "state"),
		disks: gauge("node_md_disks",
			"Number of active/failed/spare disks of device.", "device", "state"),
		disksRequired: gauge("node_md_disks_required",
			"Total number of disks of device.", "device"),
		raidDisks: gauge("node_md_raid_disks",
			"Number of raid disks on device.", "device"),
		degraded: gauge("node_md_degraded",
			"Number of degraded disks on device.", "device"),
		blocks: gauge("node_md_blocks",
			"Total number of blocks on device.", "device"),
		blocksSynced: gauge("node_md_blocks_synced",
			"Number of blocks synced on device.", "device"),

		info: gauge("mdraid_array_info",
			"Identity of an md array; always 1.", "device", "uuid", "name", "homehost", "level", "metadata"),
		avail: gauge("mdraid_array_availability",
			"1 for the array's current availability (online, degraded, failed, inactive, read-only).", "device", "availability"),
		red: gauge("mdraid_array_redundancy",
			"1 for the array's current redundancy (full, reduced, none).", "device", "redundancy"),
		progress: gauge("mdraid_array_sync_progress_ratio",
			"Progress of the running sync, 0 to 1, from the kernel's last checkpoint.", "device", "action"),
		speed: gauge("mdraid_array_sync_speed_bytes",
			"Current speed of the running sync in bytes per second.", "device", "action"),
		eta: gauge("mdraid_array_sync_eta_seconds",
			"Estimated time left for the running sync at its current speed.", "device", "action"),
		mismatch: gauge("mdraid_array_mismatch_sectors",
			"The kernel's mismatch_cnt: 512-byte sectors found inconsistent by the last check, repair or resync; reset when one starts.", "device"),
		lastSync: gauge("mdraid_array_last_sync_action",
			"1 for the kind of the last sync since the array started (check, repair, resync, recover, reshape; idle for none).", "device", "action"),
		checkPos: gauge("mdraid_array_check_position_ratio",
			"Position of the running check or repair, 0 to 1, from the kernel's last checkpoint.", "device", "action"),
		lastCheck: gauge("mdraid_array_last_check_finish_time_seconds",
			"Unix time the last completed check or repair finished, from the check records of a store (md.Array.LastCheck).", "device", "action"),
		slotMissing: gauge("mdraid_slot_missing",
			"1 for each slot that no member holds.", "device", "slot"),
		slotRecorded: gauge("mdraid_slot_recorded_info",
			"Port and disk a store recorded for a missing or faulty slot (md.Slot.Recorded); always 1.", "device", "slot", "by_path", "serial", "wwn"),
		arrayErrors: gauge("mdraid_array_errors",
			"1 when part of the array's status could not be read.", "device"),

		memberInfo: gauge("mdraid_member_info",
			"Identity of an array member; always 1.", memberLabels("serial", "wwn")...),
		memberState: gauge("mdraid_member_state",
			"1 for each state flag the kernel shows for the member.", memberLabels("state")...),
		memberErrors: &Family{Name: "mdraid_member_read_errors_total",
			Help: "Corrected read errors counted by the kernel for the member.", Type: Counter, Labels: memberLabels()},
		memberEvents: gauge("mdraid_member_events",
			"Event count in the member's superblock.", memberLabels()...),
		memberBad: gauge("mdraid_member_bad_blocks",
			"Number of bad-block ranges recorded for the member.", memberLabels()...),

		scrapeError: gauge("mdraid_scrape_error",
			"1 when the list of md arrays could not be read."),
		collectErrors: gauge("mdraid_collect_errors",
			"Number of metrics of this scrape left out because they could not be built."),
	}
}

func (s *schema) all() []*Family {
	return []*Family{s.state, s.disks, s.disksRequired, s.raidDisks,
		s.degraded, s.blocks, s.blocksSynced, s.info, s.avail, s.red, s.progress,
		s.speed, s.eta, s.mismatch, s.lastSync, s.checkPos, s.lastCheck, s.slotMissing, s.slotRecorded, s.arrayErrors,
		s.memberInfo, s.memberState, s.memberErrors, s.memberEvents, s.memberBad,
		s.scrapeError, s.collectErrors}
}

// Families returns a description of every family that Collect can give.
func Families() []*Family { return newSchema().all() }

// collector gathers the metrics of one scrape, escaping every label
// value; a metric that cannot be built, or that repeats a series already
// gathered, is counted and left out.
type collector struct {
	*schema
	out    []Metric
	seen   map[string]bool
	failed int
}

func (c *collector) gauge(f *Family, v float64, labels ...string) {
	if len(labels) != len(f.Labels) {
		c.failed++
		return
	}
	esc := make([]string, len(labels))
	for i, l := range labels {
		esc[i] = escape.Text(l)
		if !utf8.ValidString(esc[i]) {
			c.failed++
			return
		}
	}
	// Escaped values are valid UTF-8, so 0xff separates them.
	key := f.Name + "\xff" + strings.Join(esc, "\xff")
	if c.seen[key] {
		c.failed++
		return
	}
	c.seen[key] = true
	c.out = append(c.out, Metric{Family: f, Values: esc, Value: v})
}

// Collect returns the metrics of a scrape of r: err, when set, is why no
// report could be taken, and then only mdraid_scrape_error (1) and
// mdraid_collect_errors are given. The metrics come in the order they
// were built, each series once; Write sorts them.
func Collect(r *md.Report, err error) []Metric {
	c := &collector{schema: newSchema(), seen: map[string]bool{}}
	if err != nil || r == nil {
		c.gauge(c.scrapeError, 1)
	} else {
		c.gauge(c.scrapeError, 0)
		for i := range r.Arrays {
			c.array(&r.Arrays[i])
		}
	}
	c.gauge(c.collectErrors, float64(c.failed))
	return c.out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *collector) array(a *md.Array) {
	dev := a.Device
	// node_md_state, as node_exporter derives it from /proc/mdstat
	// (procfs's parseMDStat): a pending or delayed sync is printed there
	// as resync=PENDING or resync=DELAYED whatever its kind, so it counts
	// as resync.
	state := "active"
	switch {
	case a.Availability == md.Inactive:
		state = "inactive"
	case a.Activity.Pending != "":
		state = "resync"
	case a.Activity.Kind == sysfs.ActionRecover:
		state = "recovering"
	case a.Activity.Kind == sysfs.ActionResync || a.Activity.Kind == sysfs.ActionRepair:
		state = "resync"
	case a.Activity.Kind == sysfs.ActionCheck:
		state = "check"
	}
	for _, s := range []string{"active", "inactive", "recovering", "resync", "check"} {
		c.gauge(c.state, b2f(s == state), dev, s)
	}
	// node_exporter counts the active members from mdstat's [n/m], which
	// an inactive array does not have, and the spares as the members
	// mdstat marks (S): those without a slot that have not failed (a
	// member being rebuilt holds its slot; mdadm's spare count,
	// Counts.Spare, includes it). In an inactive array those are the
	// members the kernel shows as spare: assembled ones waiting for the
	// start, not those of an array stopped with its members kept.
	active, spares := a.Counts.Active, len(a.Spares)
	if a.Availability == md.Inactive {
		active, spares = 0, 0
		for _, m := range a.Members() {
			if m.Flags.Has(sysfs.FlagSpare) && !m.Flags.Failed() {
				spares++
			}
		}
	}
	c.gauge(c.disks, float64(active), dev, "active")
	c.gauge(c.disks, float64(a.Counts.Failed), dev, "failed")
	c.gauge(c.disks, float64(spares), dev, "spare")
	c.gauge(c.disksRequired, float64(a.RaidDisks), dev)
	c.gauge(c.raidDisks, float64(a.RaidDisks), dev)
	// node_exporter reads the kernel's degraded attribute (procfs
	// Mdraids) and reports 0 where there is none: on an array that is
	// not running, and on raid0 and linear, which have no redundancy
	// attributes.
	degraded := a.Degraded
	if a.Availability == md.Inactive || a.Level == "raid0" || a.Level == "linear" {
		degraded = 0
	}
	c.gauge(c.degraded, float64(degraded), dev)
	c.gauge(c.blocks, float64(a.SizeBytes/1024), dev)
	// node_exporter: the array's size when no sync runs, 0 for a pending
	// or delayed one (resync=PENDING/DELAYED), else the done part.
	synced := a.SizeBytes / 1024
	switch {
	case a.Activity.Pending != "":
		synced = 0
	case a.Activity.TotalSectors > 0:
		synced = uint64(float64(synced) * float64(a.Activity.DoneSectors) / float64(a.Activity.TotalSectors))
	}
	c.gauge(c.blocksSynced, float64(synced), dev)

	c.gauge(c.info, 1, dev, a.UUID, a.Name, a.Homehost, a.Level, a.Metadata)
	for _, v := range []md.Availability{md.Online, md.Degraded, md.Failed, md.Inactive, md.ReadOnly} {
		c.gauge(c.avail, b2f(v == a.Availability), dev, string(v))
	}
	for _, v := range []md.Redundancy{md.Full, md.Reduced, md.NoRedundancy} {
		c.gauge(c.red, b2f(v == a.Redundancy), dev, string(v))
	}
	if k := a.Activity.Kind; k != sysfs.ActionIdle && k != sysfs.ActionFrozen && a.Activity.TotalSectors > 0 {
		c.gauge(c.progress, a.Activity.Percent/100, dev, string(k))
		c.gauge(c.speed, float64(a.Activity.SpeedKiBs)*1024, dev, string(k))
		c.gauge(c.eta, float64(a.Activity.ETASeconds), dev, string(k))
		if k == sysfs.ActionCheck || k == sysfs.ActionRepair {
			c.gauge(c.checkPos, float64(a.Activity.DoneSectors)/float64(a.Activity.TotalSectors), dev, string(k))
		}
	}
	if a.MismatchSectors != nil {
		c.gauge(c.mismatch, float64(*a.MismatchSectors), dev)
	}
	if a.LastSyncAction != "" {
		c.gauge(c.lastSync, 1, dev, string(a.LastSyncAction))
	}
	if lc := a.LastCheck; lc != nil && !lc.Finished.IsZero() {
		c.gauge(c.lastCheck, float64(lc.Finished.Unix()), dev, string(lc.Action))
	}
	c.gauge(c.arrayErrors, b2f(len(a.Errors) > 0), dev)
	for _, s := range a.Slots {
		if s.Member == nil {
			c.gauge(c.slotMissing, 1, dev, strconv.Itoa(s.Slot))
		}
		if r := s.Recorded; r != nil {
			c.gauge(c.slotRecorded, 1, dev, strconv.Itoa(s.Slot), r.ByPath, r.Serial, r.WWN)
		}
		for _, m := range []*md.Member{s.Member, s.Replacement} {
			if m != nil {
				c.member(dev, m)
			}
		}
	}
	for i := range a.Spares {
		c.member(dev, &a.Spares[i])
	}
	for i := range a.Faulty {
		c.member(dev, &a.Faulty[i])
	}
}

func (c *collector) member(dev string, m *md.Member) {
	slot := "none"
	if m.Slot >= 0 {
		slot = strconv.Itoa(m.Slot)
	}
	l := []string{dev, m.Device, slot, m.ByPath}
	c.gauge(c.memberInfo, 1, append(l, m.Serial, m.WWN)...)
	seen := map[sysfs.MemberFlag]bool{}
	for _, f := range m.Flags {
		if !seen[f] { // a flag listed twice is one series
			seen[f] = true
			c.gauge(c.memberState, 1, append(l, string(f))...)
		}
	}
	c.gauge(c.memberErrors, float64(m.ReadErrors), l...)
	if m.Events != nil {
		c.gauge(c.memberEvents, float64(*m.Events), l...)
	}
	c.gauge(c.memberBad, float64(m.BadBlocks), l...)
}

// Write writes ms in the text format 0.0.4 as client_golang's registry
// and expfmt write them: families sorted by name, each with its HELP and
// TYPE lines, series sorted by their label values, labels by name.
// Metrics whose label values do not match their family's label names are
// left out; so are families without metrics.
func Write(w io.Writer, ms []Metric) error {
	byName := map[string][]Metric{}
	var names []string
	for _, m := range ms {
		if m.Family == nil || len(m.Values) != len(m.Family.Labels) {
			continue
		}
		if _, ok := byName[m.Family.Name]; !ok {
			names = append(names, m.Family.Name)
		}
		byName[m.Family.Name] = append(byName[m.Family.Name], m)
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	for _, name := range names {
		writeFamily(bw, byName[name])
	}
	return bw.Flush()
}

// writeFamily writes one family's metrics, all of the first one's family.
func writeFamily(w *bufio.Writer, ms []Metric) {
	f := ms[0].Family
	// The labels in name order, as client_golang keeps a series' label
	// pairs; series are compared by their values in that order.
	order := make([]int, len(f.Labels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return f.Labels[order[i]] < f.Labels[order[j]] })
	sort.SliceStable(ms, func(i, j int) bool {
		for _, k := range order {
			if a, b := ms[i].Values[k], ms[j].Values[k]; a != b {
				return a < b
			}
		}
		return false
	})
	w.WriteString("# HELP ")
	w.WriteString(f.Name)
	w.WriteByte(' ')
	helpEscaper.WriteString(w, f.Help)
	w.WriteString("\n# TYPE ")
	w.WriteString(f.Name)
	w.WriteByte(' ')
	w.WriteString(f.Type.String())
	w.WriteByte('\n')
	for _, m := range ms {
		w.WriteString(f.Name)
		for n, k := range order {
			if n == 0 {
				w.WriteByte('{')
			} else {
				w.WriteByte(',')
			}
			w.WriteString(f.Labels[k])
			w.WriteString(`="`)
			valueEscaper.WriteString(w, m.Values[k])
			w.WriteByte('"')
		}
		if len(order) > 0 {
			w.WriteByte('}')
		}
		w.WriteByte(' ')
		writeFloat(w, m.Value)
		w.WriteByte('\n')
	}
}

// The escapes of the text format: a backslash and a newline in HELP, and
// a double quote as well in label values.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeFloat writes f as the text format does: 1, 0 and -1 as integers,
// NaN, +Inf and -Inf by name, anything else in Go's shortest form.
func writeFloat(w *bufio.Writer, f float64) {
	switch {
	case f == 1:
		w.WriteByte('1')
	case f == 0:
		w.WriteByte('0')
	case f == -1:
		w.WriteString("-1")
	case math.IsNaN(f):
		w.WriteString("NaN")
	case math.IsInf(f, +1):
		w.WriteString("+Inf")
	case math.IsInf(f, -1):
		w.WriteString("-Inf")
	default:
		w.Write(strconv.AppendFloat(w.AvailableBuffer(), f, 'g', -1, 64))
	}
}
