package md

import (
	"context"
	"testing"

	"github.com/go-mdraid/mdraid/internal/fixture"
)

// BenchmarkDiscover8 runs Discover and the model over a real capture of
// eight RAID1 arrays (testdata/bench/eight-arrays, made by
// go run ./bench/statusvm -capture), reading every member's superblock.
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
}
