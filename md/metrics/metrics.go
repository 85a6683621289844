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
//	mdraid_slot_missing{device,slot}                  1 for a slot without a member
//	mdraid_member_info{device,member,slot,by_path,serial,wwn} 1
//	mdraid_member_state{device,member,slot,by_path,state} 1 for each flag the kernel shows
//	mdraid_member_read_errors_total{device,member,slot,by_path}
//	mdraid_member_events{device,member,slot,by_path}  superblock events
//	mdraid_member_bad_blocks{device,member,slot,by_path}
//	mdraid_array_errors{device}                        1 when part of the array could not be read
//	mdraid_scrape_error                                1 when the array list could not be read
//
// slot is the slot number, or "none" for spares and unslotted faulty
// members.
package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/md"
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
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descDisks, descDisksRequired, descRaidDisks,
		descDegraded, descBlocks, descBlocksSynced, descInfo, descAvail, descRed, descProgress,
		descSpeed, descETA, descSlotMissing, descArrayErrors, descMemberInfo, descMemberState,
		descMemberErrors, descMemberEvents, descMemberBad, descScrapeError} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r, err := c.src.Discover(c.ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 0)
	for i := range r.Arrays {
		collectArray(ch, &r.Arrays[i])
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func collectArray(ch chan<- prometheus.Metric, a *md.Array) {
	dev := a.Device
	// node_md_state, as node_exporter's sysfs collector derives it.
	state := "active"
	switch {
	case a.Availability == md.Inactive:
		state = "inactive"
	case a.Activity.Kind == md.Recover:
		state = "recovering"
	case a.Activity.Kind == md.Resync || a.Activity.Kind == md.Repair:
		state = "resync"
	case a.Activity.Kind == md.Check:
		state = "check"
	}
	for _, s := range []string{"active", "inactive", "recovering", "resync", "check"} {
		gauge(ch, descState, b2f(s == state), dev, s)
	}
	gauge(ch, descDisks, float64(a.Counts.Active), dev, "active")
	gauge(ch, descDisks, float64(a.Counts.Failed), dev, "failed")
	gauge(ch, descDisks, float64(a.Counts.Spare), dev, "spare")
	gauge(ch, descDisksRequired, float64(a.RaidDisks), dev)
	gauge(ch, descRaidDisks, float64(a.RaidDisks), dev)
	gauge(ch, descDegraded, float64(a.Degraded), dev)
	gauge(ch, descBlocks, float64(a.SizeBytes/1024), dev)
	synced := a.SizeBytes / 1024
	if a.Activity.TotalSectors > 0 {
		synced = uint64(float64(synced) * float64(a.Activity.DoneSectors) / float64(a.Activity.TotalSectors))
	}
	gauge(ch, descBlocksSynced, float64(synced), dev)

	gauge(ch, descInfo, 1, dev, a.UUID, a.Name, a.Homehost, a.Level, a.Metadata)
	for _, v := range []md.Availability{md.Online, md.Degraded, md.Failed, md.Inactive, md.ReadOnly} {
		gauge(ch, descAvail, b2f(v == a.Availability), dev, string(v))
	}
	for _, v := range []md.Redundancy{md.Full, md.Reduced, md.NoRedundancy} {
		gauge(ch, descRed, b2f(v == a.Redundancy), dev, string(v))
	}
	if k := a.Activity.Kind; k != md.Idle && k != md.Frozen && a.Activity.TotalSectors > 0 {
		gauge(ch, descProgress, a.Activity.Percent/100, dev, string(k))
		gauge(ch, descSpeed, float64(a.Activity.SpeedKiBs)*1024, dev, string(k))
		gauge(ch, descETA, float64(a.Activity.ETASeconds), dev, string(k))
	}
	gauge(ch, descArrayErrors, b2f(len(a.Errors) > 0), dev)
	for _, s := range a.Slots {
		if s.Member == nil {
			gauge(ch, descSlotMissing, 1, dev, strconv.Itoa(s.Slot))
		}
		for _, m := range []*md.Member{s.Member, s.Replacement} {
			if m != nil {
				collectMember(ch, dev, m)
			}
		}
	}
	for i := range a.Spares {
		collectMember(ch, dev, &a.Spares[i])
	}
	for i := range a.Faulty {
		collectMember(ch, dev, &a.Faulty[i])
	}
}

func collectMember(ch chan<- prometheus.Metric, dev string, m *md.Member) {
	slot := "none"
	if m.Slot >= 0 {
		slot = strconv.Itoa(m.Slot)
	}
	l := []string{dev, m.Device, slot, m.ByPath}
	gauge(ch, descMemberInfo, 1, append(l, m.Serial, m.WWN)...)
	for _, f := range m.Flags {
		gauge(ch, descMemberState, 1, append(l, f)...)
	}
	ch <- prometheus.MustNewConstMetric(descMemberErrors, prometheus.CounterValue, float64(m.ReadErrors), l...)
	if m.Events != nil {
		gauge(ch, descMemberEvents, float64(*m.Events), l...)
	}
	gauge(ch, descMemberBad, float64(m.BadBlocks), l...)
}
