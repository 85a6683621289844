// Package metrics exposes the md status model as Prometheus metrics.
//
// # Metrics
//
// For familiarity it produces node_exporter's md metrics with the same
// names, labels and meaning (node_md_state, node_md_disks,
// node_md_disks_required, node_md_raid_disks, node_md_degraded,
// node_md_blocks, node_md_blocks_synced), computed from sysfs like
// node_exporter's sysfs collector, and adds what node_exporter lacks,
// under the mdraid_ prefix:
//
//	mdraid_array_info{device,uuid,name,homehost,level,metadata} 1
//	mdraid_array_availability{device,availability}    1 for the current value, 0 for the others
//	mdraid_array_redundancy{device,redundancy}        likewise
//	mdraid_array_sync_progress_ratio{device,action}   0..1 while a sync runs
//	mdraid_array_sync_speed_bytes{device,action}      bytes per second
//	mdraid_array_sync_eta_seconds{device,action}
//	mdraid_array_mismatch_sectors{device}             mismatch_cnt, 512-byte sectors
//	mdraid_array_last_sync_action{device,action}      1 for the kind of the last sync since the array started
//	mdraid_array_check_position_ratio{device,action}  0..1 while a check or repair runs
//	mdraid_array_last_check_finish_time_seconds{device,action} Unix time the last check or repair finished (from a store)
//	mdraid_slot_missing{device,slot}                  1 for a slot without a member
//	mdraid_member_info{device,member,slot,by_path,serial,wwn} 1
//	mdraid_member_state{device,member,slot,by_path,state} 1 for each flag the kernel shows
//	mdraid_member_read_errors_total{device,member,slot,by_path}
//	mdraid_member_events{device,member,slot,by_path}  superblock events
//	mdraid_member_bad_blocks{device,member,slot,by_path}
//	mdraid_array_errors{device}                        1 when part of the array could not be read
//	mdraid_scrape_error                                1 when the array list (or an array asked for) could not be read
//	mdraid_collect_errors                              metrics of this scrape that could not be built
//
// slot is the slot number, or "none" for spares and unslotted faulty
// members. mdraid_member_state gives the kernel's flags as read: a
// "faulty" beside "in_sync" or "spare" is a member with bad blocks not
// yet recorded, not a failed one (sysfs.MemberState.Failed), so an alert
// on failed members reads
//
//	mdraid_member_state{state="faulty"} unless on(device, member) (mdraid_member_state{state=~"in_sync|spare"})
//
// # Mismatches and checks
//
// mdraid_array_mismatch_sectors is the kernel's mismatch_cnt (see
// md.Array.MismatchSectors), present for redundant running arrays only:
// sectors in the regions where the last check, repair or resync found
// copies or parity disagreeing. The kernel resets it when a check, repair
// or resync starts and when the array stops, so it is a gauge, not a
// counter; mdraid_array_last_sync_action says which kind of sync left it
// ("idle": none since the array started; Linux 6.1's words are reported as
// today's). On raid1 and raid10 a non-zero count can be harmless; on
// raid4, raid5 and raid6 it is a real inconsistency (md.MismatchMeaning).
// An alert on it reads, for example,
//
//	mdraid_array_mismatch_sectors > 0 and on(device) mdraid_array_last_sync_action{action="check"} == 1
//
// mdraid_array_check_position_ratio is the running check's or repair's
// position, from the kernel's last checkpoint: the same value as
// mdraid_array_sync_progress_ratio, under a name that is there only
// while a scrub runs, not a rebuild.
//
// # Snapshots
//
// NewCollector with an *md.Manager reads sysfs on every scrape. A daemon
// that takes snapshots anyway serves them instead with Latest, whose Set is
// a watch.Options.Snapshot: mdctl watch --metrics-listen does so. There
// mdraid_scrape_error is 1, with no array series, before the first
// snapshot and while the last one failed; a stale report is never served.
//
// # Untrusted labels
//
// Names, homehosts, serials and WWNs come from disks and their firmware,
// and may hold any bytes. Every label value is escaped with the rule of
// mdctl's text output (control characters and bytes that are not UTF-8
// become \xHH, a backslash \\), so every value is valid UTF-8 and
// distinct values stay distinct. A metric that still cannot be built is
// left out and counted in mdraid_collect_errors: one array never blanks
// the scrape for the others.
package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/internal/escape"
	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/sysfs"
)

// Source produces a status report; *md.Manager is one.
type Source interface {
	Discover(ctx context.Context) (*md.Report, error)
}

// Collector is a prometheus.Collector of md status.
type Collector struct {
	src Source
	ctx context.Context
}

// NewCollector returns a Collector that calls src.Discover on every scrape.
func NewCollector(ctx context.Context, src Source) *Collector {
	return &Collector{src: src, ctx: ctx}
}

var (
	memberLabels = []string{"device", "member", "slot", "by_path"}

	descState = prometheus.NewDesc("node_md_state",
		"Indicates the state of md-device.", []string{"device", "state"}, nil)
	descDisks = prometheus.NewDesc("node_md_disks",
		"Number of active/failed/spare disks of device.", []string{"device", "state"}, nil)
	descDisksRequired = prometheus.NewDesc("node_md_disks_required",
		"Total number of disks of device.", []string{"device"}, nil)
	descRaidDisks = prometheus.NewDesc("node_md_raid_disks",
		"Number of raid disks on disk.", []string{"device"}, nil)
	descDegraded = prometheus.NewDesc("node_md_degraded",
		"Number of degraded disks on device.", []string{"device"}, nil)
	descBlocks = prometheus.NewDesc("node_md_blocks",
		"Total number of blocks on device.", []string{"device"}, nil)
	descBlocksSynced = prometheus.NewDesc("node_md_blocks_synced",
		"Number of blocks synced on device.", []string{"device"}, nil)

	descInfo = prometheus.NewDesc("mdraid_array_info",
		"Identity of an md array; always 1.", []string{"device", "uuid", "name", "homehost", "level", "metadata"}, nil)
	descAvail = prometheus.NewDesc("mdraid_array_availability",
		"1 for the array's current availability (online, degraded, failed, inactive, read-only).", []string{"device", "availability"}, nil)
	descRed = prometheus.NewDesc("mdraid_array_redundancy",
		"1 for the array's current redundancy (full, reduced, none).", []string{"device", "redundancy"}, nil)
	descProgress = prometheus.NewDesc("mdraid_array_sync_progress_ratio",
		"Progress of the running sync, 0 to 1, from the kernel's last checkpoint.", []string{"device", "action"}, nil)
	descSpeed = prometheus.NewDesc("mdraid_array_sync_speed_bytes",
		"Current speed of the running sync in bytes per second.", []string{"device", "action"}, nil)
	descETA = prometheus.NewDesc("mdraid_array_sync_eta_seconds",
		"Estimated time left for the running sync at its current speed.", []string{"device", "action"}, nil)
	descMismatch = prometheus.NewDesc("mdraid_array_mismatch_sectors",
		"The kernel's mismatch_cnt: 512-byte sectors found inconsistent by the last check, repair or resync; reset when one starts.", []string{"device"}, nil)
	descLastSync = prometheus.NewDesc("mdraid_array_last_sync_action",
		"1 for the kind of the last sync since the array started (check, repair, resync, recover, reshape; idle for none).", []string{"device", "action"}, nil)
	descCheckPos = prometheus.NewDesc("mdraid_array_check_position_ratio",
		"Position of the running check or repair, 0 to 1, from the kernel's last checkpoint.", []string{"device", "action"}, nil)
	descLastCheck = prometheus.NewDesc("mdraid_array_last_check_finish_time_seconds",
		"Unix time the last completed check or repair finished, from the check records of a store (md.Array.LastCheck).", []string{"device", "action"}, nil)
	descSlotMissing = prometheus.NewDesc("mdraid_slot_missing",
		"1 for each slot that no member holds.", []string{"device", "slot"}, nil)
	descArrayErrors = prometheus.NewDesc("mdraid_array_errors",
		"1 when part of the array's status could not be read.", []string{"device"}, nil)
	descMemberInfo = prometheus.NewDesc("mdraid_member_info",
		"Identity of an array member; always 1.", append(append([]string{}, memberLabels...), "serial", "wwn"), nil)
	descMemberState = prometheus.NewDesc("mdraid_member_state",
		"1 for each state flag the kernel shows for the member.", append(append([]string{}, memberLabels...), "state"), nil)
	descMemberErrors = prometheus.NewDesc("mdraid_member_read_errors_total",
		"Corrected read errors counted by the kernel for the member.", memberLabels, nil)
	descMemberEvents = prometheus.NewDesc("mdraid_member_events",
		"Event count in the member's superblock.", memberLabels, nil)
	descMemberBad = prometheus.NewDesc("mdraid_member_bad_blocks",
		"Number of bad-block ranges recorded for the member.", memberLabels, nil)
	descScrapeError = prometheus.NewDesc("mdraid_scrape_error",
		"1 when the list of md arrays could not be read.", nil, nil)
	descCollectErrors = prometheus.NewDesc("mdraid_collect_errors",
		"Number of metrics of this scrape left out because they could not be built.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descDisks, descDisksRequired, descRaidDisks,
		descDegraded, descBlocks, descBlocksSynced, descInfo, descAvail, descRed, descProgress,
		descSpeed, descETA, descMismatch, descLastSync, descCheckPos, descLastCheck, descSlotMissing, descArrayErrors, descMemberInfo, descMemberState,
		descMemberErrors, descMemberEvents, descMemberBad, descScrapeError, descCollectErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	e := &emitter{ch: ch}
	defer func() { e.gauge(descCollectErrors, float64(e.failed)) }()
	r, err := c.src.Discover(c.ctx)
	if err != nil {
		e.gauge(descScrapeError, 1)
		return
	}
	e.gauge(descScrapeError, 0)
	for i := range r.Arrays {
		collectArray(e, &r.Arrays[i])
	}
}

// emitter sends metrics, escaping every label value; a metric that cannot
// be built is counted and left out.
type emitter struct {
	ch     chan<- prometheus.Metric
	failed int
}

func (e *emitter) metric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	esc := make([]string, len(labels))
	for i, l := range labels {
		esc[i] = escape.Text(l)
	}
	m, err := prometheus.NewConstMetric(d, t, v, esc...)
	if err != nil {
		e.failed++
		return
	}
	e.ch <- m
}

func (e *emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.metric(d, prometheus.GaugeValue, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func collectArray(e *emitter, a *md.Array) {
	dev := a.Device
	// node_md_state, as node_exporter's sysfs collector derives it.
	state := "active"
	switch {
	case a.Availability == md.Inactive:
		state = "inactive"
	case a.Activity.Kind == sysfs.ActionRecover:
		state = "recovering"
	case a.Activity.Kind == sysfs.ActionResync || a.Activity.Kind == sysfs.ActionRepair:
		state = "resync"
	case a.Activity.Kind == sysfs.ActionCheck:
		state = "check"
	}
	for _, s := range []string{"active", "inactive", "recovering", "resync", "check"} {
		e.gauge(descState, b2f(s == state), dev, s)
	}
	e.gauge(descDisks, float64(a.Counts.Active), dev, "active")
	e.gauge(descDisks, float64(a.Counts.Failed), dev, "failed")
	e.gauge(descDisks, float64(a.Counts.Spare), dev, "spare")
	e.gauge(descDisksRequired, float64(a.RaidDisks), dev)
	e.gauge(descRaidDisks, float64(a.RaidDisks), dev)
	e.gauge(descDegraded, float64(a.Degraded), dev)
	e.gauge(descBlocks, float64(a.SizeBytes/1024), dev)
	synced := a.SizeBytes / 1024
	if a.Activity.TotalSectors > 0 {
		synced = uint64(float64(synced) * float64(a.Activity.DoneSectors) / float64(a.Activity.TotalSectors))
	}
	e.gauge(descBlocksSynced, float64(synced), dev)

	e.gauge(descInfo, 1, dev, a.UUID, a.Name, a.Homehost, a.Level, a.Metadata)
	for _, v := range []md.Availability{md.Online, md.Degraded, md.Failed, md.Inactive, md.ReadOnly} {
		e.gauge(descAvail, b2f(v == a.Availability), dev, string(v))
	}
	for _, v := range []md.Redundancy{md.Full, md.Reduced, md.NoRedundancy} {
		e.gauge(descRed, b2f(v == a.Redundancy), dev, string(v))
	}
	if k := a.Activity.Kind; k != sysfs.ActionIdle && k != sysfs.ActionFrozen && a.Activity.TotalSectors > 0 {
		e.gauge(descProgress, a.Activity.Percent/100, dev, string(k))
		e.gauge(descSpeed, float64(a.Activity.SpeedKiBs)*1024, dev, string(k))
		e.gauge(descETA, float64(a.Activity.ETASeconds), dev, string(k))
		if k == sysfs.ActionCheck || k == sysfs.ActionRepair {
			e.gauge(descCheckPos, float64(a.Activity.DoneSectors)/float64(a.Activity.TotalSectors), dev, string(k))
		}
	}
	if a.MismatchSectors != nil {
		e.gauge(descMismatch, float64(*a.MismatchSectors), dev)
	}
	if a.LastSyncAction != "" {
		e.gauge(descLastSync, 1, dev, string(a.LastSyncAction))
	}
	if lc := a.LastCheck; lc != nil && !lc.Finished.IsZero() {
		e.gauge(descLastCheck, float64(lc.Finished.Unix()), dev, string(lc.Action))
	}
	e.gauge(descArrayErrors, b2f(len(a.Errors) > 0), dev)
	for _, s := range a.Slots {
		if s.Member == nil {
			e.gauge(descSlotMissing, 1, dev, strconv.Itoa(s.Slot))
		}
		for _, m := range []*md.Member{s.Member, s.Replacement} {
			if m != nil {
				collectMember(e, dev, m)
			}
		}
	}
	for i := range a.Spares {
		collectMember(e, dev, &a.Spares[i])
	}
	for i := range a.Faulty {
		collectMember(e, dev, &a.Faulty[i])
	}
}

func collectMember(e *emitter, dev string, m *md.Member) {
	slot := "none"
	if m.Slot >= 0 {
		slot = strconv.Itoa(m.Slot)
	}
	l := []string{dev, m.Device, slot, m.ByPath}
	e.gauge(descMemberInfo, 1, append(l, m.Serial, m.WWN)...)
	seen := map[sysfs.MemberFlag]bool{}
	for _, f := range m.Flags {
		if !seen[f] { // a flag listed twice would be a duplicate metric
			seen[f] = true
			e.gauge(descMemberState, 1, append(l, string(f))...)
		}
	}
	e.metric(descMemberErrors, prometheus.CounterValue, float64(m.ReadErrors), l...)
	if m.Events != nil {
		e.gauge(descMemberEvents, float64(*m.Events), l...)
	}
	e.gauge(descMemberBad, float64(m.BadBlocks), l...)
}
