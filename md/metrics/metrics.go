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
//	mdraid_slot_recorded_info{device,slot,by_path,serial,wwn} 1 for a missing or faulty slot a store has a record of
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
// mdraid_slot_recorded_info names the port and disk that belong in a
// missing or faulty slot, from the slot records of a store (mdctl status
// --store, mdctl watch --store; md.Report.AddRecords): once a failed
// member has been removed, no member series carries its port any more,
// and this one still does. An alert on a missing slot joins it:
//
//	mdraid_slot_missing * on(device, slot) group_left(by_path) mdraid_slot_recorded_info
//
// # node_exporter's node_md_* series
//
// The node_md_* values follow node_exporter's md collector, which takes
// node_md_state, node_md_disks, node_md_disks_required, node_md_blocks
// and node_md_blocks_synced from /proc/mdstat and node_md_raid_disks and
// node_md_degraded from sysfs (prometheus/procfs MDStat and Mdraids). In
// particular a resync that has not started, pending or delayed (mdstat
// resync=PENDING or resync=DELAYED), is node_md_state{state="resync"} 1
// with node_md_blocks_synced 0; node_md_disks{state="spare"} counts the
// members mdstat marks (S), not those being rebuilt, and
// node_md_disks{state="active"} is 0 for an inactive array (mdstat has
// no [n/m] for it); node_md_degraded is
// 0 where the kernel has no degraded attribute (raid0, linear, an
// inactive array). Tests of cmd/mdctl run procfs's parsers, and Debian's
// prometheus-node-exporter binary with only its md collector, on every
// real capture in testdata/fixtures (from 6.1, 6.12 and 7.2) and compare
// each series, and with the binary also HELP and TYPE; a VM test runs
// that binary in the guest beside mdctl on live arrays (healthy,
// degraded, recovering, a pending resync, inactive, checking) on every
// kernel of the matrix. What remains different, and why:
//
//   - node_md_blocks_synced while a sync runs: node_exporter reads
//     mdstat's position (the kernel's current position less the I/O in
//     flight), mdctl sync_completed (its last checkpoint); they differ
//     by what is in flight.
//   - An inactive array: mdstat shows the members' total size and no
//     [n/m] count, and raid_disks reads empty, so node_exporter reports
//     that size as node_md_blocks and node_md_blocks_synced,
//     node_md_disks_required 0 and no node_md_raid_disks; mdctl reports
//     0 blocks (the array serves nothing) and the slot count of the
//     newest member superblock in both.
//   - A delayed resync (sync_completed reads "delayed"): procfs v0.22's
//     Mdraids cannot parse that value, so node_exporter's collector fails
//     after the mdstat series and sends no node_md_raid_disks or
//     node_md_degraded for any array while it lasts; mdctl sends both.
//   - Debian bookworm's node_exporter 1.5.0 has no node_md_raid_disks
//     or node_md_degraded at all (later versions read them from sysfs).
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
// # Alerts and a dashboard
//
// The repository's contrib/prometheus/mdraid-rules.yml holds alerting
// and recording rules over these series (degraded, failed and inactive
// arrays, missing slots with their recorded ports, failed members,
// stalled and finished rebuilds, mismatches, overdue checks, scrape
// errors), and contrib/grafana/mdraid-dashboard.json a dashboard with a
// row per array. The tests of cmd/mdctl run the rules with promtool on
// what mdctl status --format=prometheus prints for the real captures in
// testdata/fixtures, and check every dashboard query against those
// series.
//
// # Without the client library
//
// Package md/metrics/promtext builds the same metrics (Collector is built
// on its Collect) and writes them in the text format, byte for byte as
// a registry and expfmt write this Collector's, without linking the
// Prometheus client: mdctl status --format=prometheus and mdctl watch
// --metrics-listen use it.
//
// # Snapshots
//
// NewCollector with an *md.Manager reads sysfs and every member's
// superblock on every scrape. An exporter that is scraped every few
// seconds should pass an *md.Poller (Manager.NewPoller) instead: it reads
// the superblocks once and then only when sysfs shows an array changed,
// so that steady-state scrapes read no member disk (idle disks can spin
// down); the trade-off, member events as of their last read, is in
// Poller's documentation. A daemon
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
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/md/metrics/promtext"
)

// Source produces a status report; *md.Manager, *md.Poller and *Latest
// are sources.
type Source = promtext.Source

// Latest is a Source that serves the snapshot most recently given to its
// Set (promtext.Latest).
type Latest = promtext.Latest

// ErrNoSnapshot is the error of Latest.Discover before the first Set.
var ErrNoSnapshot = promtext.ErrNoSnapshot

// Collector is a prometheus.Collector of md status.
type Collector struct {
	src   Source
	ctx   context.Context
	descs []*prometheus.Desc          // in the order of promtext.Families
	byFam map[string]*prometheus.Desc // by family name
}

// NewCollector returns a Collector that calls src.Discover on every scrape.
func NewCollector(ctx context.Context, src Source) *Collector {
	c := &Collector{src: src, ctx: ctx, byFam: map[string]*prometheus.Desc{}}
	for _, f := range promtext.Families() {
		d := prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		c.descs = append(c.descs, d)
		c.byFam[f.Name] = d
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A metric that the client
// refuses to build is left out and counted in mdraid_collect_errors, as
// promtext.Collect counts the ones it leaves out. A source that has no
// snapshot yet (a Latest before its first Set) is waited for up to
// promtext.DefaultReadyWait; if it still has none, the scrape has no md
// series at all rather than a scrape error that did not happen.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.ctx, promtext.DefaultReadyWait)
	r, err := c.src.Discover(ctx)
	cancel()
	if errors.Is(err, ErrNoSnapshot) {
		return
	}
	var errs *promtext.Metric
	failed := 0.0
	for _, m := range promtext.Collect(r, err) {
		if m.Family.Name == "mdraid_collect_errors" {
			errs = &m
			continue
		}
		t := prometheus.GaugeValue
		if m.Family.Type == promtext.Counter {
			t = prometheus.CounterValue
		}
		d := c.byFam[m.Family.Name]
		if d == nil {
			failed++
			continue
		}
		pm, err := prometheus.NewConstMetric(d, t, m.Value, m.Values...)
		if err != nil {
			failed++
			continue
		}
		ch <- pm
	}
	if errs != nil {
		failed += errs.Value
	}
	if pm, err := prometheus.NewConstMetric(c.byFam["mdraid_collect_errors"], prometheus.GaugeValue, failed); err == nil {
		ch <- pm
	}
}
