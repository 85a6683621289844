package promtext_test

import (
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
)

// A textfile for node_exporter's textfile collector: every series of a
// report in the text format. Here the report is made by hand; a program
// takes it from md.Manager.Discover.
func ExampleWrite() {
	r := &md.Report{Arrays: []md.Array{{
		Device: "md0", Level: "raid1", Metadata: "1.0", Name: "boot", Homehost: "talos",
		Availability: md.Degraded, Redundancy: md.NoRedundancy, RaidDisks: 2, Degraded: 1,
		Slots: []md.Slot{{Slot: 0, Member: &md.Member{Device: "sda1", Slot: 0, ByPath: "pci-0000:00:1f.2-ata-1.0-part1"}}, {Slot: 1}},
	}}}
	var out strings.Builder
	if err := promtext.Write(&out, promtext.Collect(r, nil)); err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "mdraid_array_availability{") || strings.HasPrefix(line, "mdraid_slot_missing") {
			fmt.Println(line)
		}
	}
	// Output:
	// mdraid_array_availability{availability="degraded",device="md0"} 1
	// mdraid_array_availability{availability="failed",device="md0"} 0
	// mdraid_array_availability{availability="inactive",device="md0"} 0
	// mdraid_array_availability{availability="online",device="md0"} 0
	// mdraid_array_availability{availability="read-only",device="md0"} 0
	// mdraid_slot_missing{device="md0",slot="1"} 1
}

// A metrics endpoint that reads sysfs on every scrape. A daemon that
// takes snapshots anyway serves a promtext.Latest instead.
func ExampleHandler() {
	m, err := md.Open(nil) // the host's /sys and /dev
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promtext.Handler(m))
	log.Fatal(http.ListenAndServe("127.0.0.1:9110", mux))
}
