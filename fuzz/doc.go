// Package fuzz holds fuzz targets for the superblock codec that use only
// its exported API (see fuzz_test.go). Targets that need internals live in
// superblock/fuzz_test.go. Crashers found are kept under
// testdata/fuzz/<Target>/ so that go test replays them.
//
// Run one target at a time, for example:
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=20s ./fuzz
//
// FuzzProbe works on whole (small) device images of up to 128 KiB; the
// fuzzer minimises each new interesting input of that size for up to a
// minute by default, during which it reports no progress. Pass
// -fuzzminimizetime=2s for short runs.
package fuzz
