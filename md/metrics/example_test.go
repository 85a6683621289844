package metrics_test

import (
	"context"
	"fmt"
	"log"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/mdtest"
	"github.com/go-mdraid/mdraid/md/metrics"
)

// Register md's collector with a Prometheus registry: every scrape reads
// the arrays afresh (Manager.Discover). The system is a capture of a
// real kernel (a RAID1 whose member vdb failed), rebuilt by md/mdtest;
// an exporter serves the registry with promhttp.HandlerFor.
func ExampleNewCollector() {
	sys, err := mdtest.New("raid1-failed")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(context.Background(), m))
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mdraid_slot_missing" && f.GetName() != "mdraid_array_availability" {
			continue
		}
		for _, mt := range f.GetMetric() {
			if mt.GetGauge().GetValue() == 0 {
				continue // one series per availability: the one that holds is 1
			}
			labels := ""
			for _, l := range mt.GetLabel() {
				labels += " " + l.GetName() + "=" + l.GetValue()
			}
			fmt.Println(f.GetName()+labels, mt.GetGauge().GetValue())
		}
	}
	// Output:
	// mdraid_array_availability availability=degraded device=md0 1
	// mdraid_slot_missing device=md0 slot=1 1
}

// A long-running exporter with its own registry polls through an
// md.Poller: after the first scrape, scrapes read sysfs alone and no
// member disk, until sysfs shows an array changed. Here a member of the
// captured mirror fails between two scrapes: the next scrape shows it,
// and reads that array's superblocks again.
func ExampleNewCollector_poller() {
	sys, err := mdtest.New("raid1-v1.2")
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	m, err := md.Open(sys.Config())
	if err != nil {
		log.Fatal(err)
	}
	p := m.NewPoller()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(context.Background(), p))

	scrape := func() {
		families, err := reg.Gather()
		if err != nil {
			log.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "node_md_degraded" {
				continue
			}
			for _, mt := range f.GetMetric() {
				fmt.Printf("%s %v, superblocks read so far: %d\n", f.GetName(), mt.GetGauge().GetValue(), p.SuperblockReads())
			}
		}
	}
	scrape()
	scrape()
	sys.Fail("vdb")
	scrape()
	scrape()
	// Output:
	// node_md_degraded 0, superblocks read so far: 2
	// node_md_degraded 0, superblocks read so far: 2
	// node_md_degraded 1, superblocks read so far: 4
	// node_md_degraded 1, superblocks read so far: 4
}
