package md

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// BenchmarkDiscover8 runs Discover and the model over a real capture of
// eight RAID1 arrays (testdata/bench/eight-arrays, made by
// go run ./bench/statusvm -capture), reading every member's superblock.
// Besides allocs/op and B/op it reports what one member and one array
// cost: allocs/member and B/member are reading one member's sysfs facts
// and device identity; allocs/array and B/array are a status of one array
// less that for each of its members (so they include the superblock
// reads), so that growth per array and per member shows.
func BenchmarkDiscover8(b *testing.B) {
	m := fixtureManager(b, fixture.Named(b, "eight-arrays"))
	ctx := context.Background()
	r, err := m.Discover(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if len(r.Arrays) != 8 {
		b.Fatalf("found %d arrays, want 8", len(r.Arrays))
	}
	for _, a := range r.Arrays {
		if a.Availability != Online || len(a.Errors) > 0 {
			b.Fatalf("%s: %s %v", a.Device, a.Availability, a.Errors)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Discover(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	fsys := m.fs.WithCache()
	arr, err := fsys.Array("md7")
	if err != nil {
		b.Fatal(err)
	}
	mem, err := arr.Members()
	if err != nil || len(mem) == 0 {
		b.Fatal(mem, err)
	}
	var ms runtime.MemStats
	measure := func(f func()) (allocs, bytes float64) {
		runtime.ReadMemStats(&ms)
		a0, b0 := ms.Mallocs, ms.TotalAlloc
		const n = 50
		for range n {
			f()
		}
		runtime.ReadMemStats(&ms)
		return float64(ms.Mallocs-a0) / n, float64(ms.TotalAlloc-b0) / n
	}
	ma, mb := measure(func() { m.readMember(fsys, mem[0], nil) })
	aa, ab := measure(func() { m.status(fsys, "md7") })
	perMember := float64(len(mem))
	b.ReportMetric(ma, "allocs/member")
	b.ReportMetric(mb, "B/member")
	b.ReportMetric(aa-perMember*ma, "allocs/array")
	b.ReportMetric(ab-perMember*mb, "B/array")
}

// BenchmarkStatusLookup looks up md7 of the eight-array capture by kernel
// name, device path, superblock name and UUID (issue 36: a lookup by name
// or UUID should cost at most twice one by kernel name).
func BenchmarkStatusLookup(b *testing.B) {
	m := fixtureManager(b, fixture.Named(b, "eight-arrays"))
	ctx := context.Background()
	want, err := m.Status(ctx, "md7")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ by, name string }{
		{"kernel-name", "md7"},
		{"name", want.Name},
		{"homehost-name", want.Homehost + ":" + want.Name},
		{"uuid", want.UUID},
	} {
		b.Run(bc.by, func(b *testing.B) {
			a, err := m.Status(ctx, bc.name)
			if err != nil || a.Device != "md7" {
				b.Fatalf("Status(%q) = %s, %v; want md7", bc.name, a.Device, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Status(ctx, bc.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
