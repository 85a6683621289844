// Package cpuprofile calls a function repeatedly under the CPU profiler,
// for the benchmarks under bench/.
package cpuprofile

import (
	"os"
	"runtime/pprof"
	"time"
)

// Run calls call n times with the CPU profiler writing to file, and
// returns the wall time of each call. before, if not nil, runs before
// each call and is not timed (the profiler still sees its CPU in this
// process, not that of the children it runs).
func Run(file string, n int, before, call func() error) (times []time.Duration, err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	defer pprof.StopCPUProfile()
	for i := 0; i < n; i++ {
		if before != nil {
			if err := before(); err != nil {
				return times, err
			}
		}
		start := time.Now()
		if err := call(); err != nil {
			return times, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}
