package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	qt "github.com/frankban/quicktest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchCLI runs mdctl watch --json --store --exec on a captured
// system until the first event (SlotRecorded), then stops it with SIGINT
// as a terminal would.
func TestWatchCLI(t *testing.T) {
	c := qt.New(t)
	flags, _ := materialize(t, "boot-mirror")
	dir := t.TempDir()
	store := filepath.Join(dir, "slots.json")
	seen := filepath.Join(dir, "seen")
	prog := filepath.Join(dir, "prog")
	c.Assert(os.WriteFile(prog, []byte("#!/bin/sh\necho \"$# $* $MDRAID_EVENT $MDRAID_ARRAY $MDRAID_ARRAY_NAME\" >> "+seen+"\n"), 0o755), qt.IsNil)

	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- run(append(flags, "watch", "--json", "--store", store, "--exec", prog, "--rescan", "50ms"), &out, &errOut, func(int) {})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "\n") || !fileHas(seen, "SlotRecorded") {
		if time.Now().After(deadline) {
			t.Fatalf("no event; stdout %q stderr %q", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Assert(syscall.Kill(os.Getpid(), syscall.SIGINT), qt.IsNil)
	select {
	case code := <-done:
		c.Assert(code, qt.Equals, 0)
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop on SIGINT")
	}
	var e map[string]any
	line, _, _ := strings.Cut(out.String(), "\n")
	c.Assert(json.Unmarshal([]byte(line), &e), qt.IsNil)
	c.Assert(e["event"], qt.Equals, "SlotRecorded")
	c.Assert(e["array"], qt.Equals, "md127")
	c.Assert(e["array_path"], qt.Equals, flags[3]+"/md127")
	c.Assert(e["name"], qt.Equals, "boot")
	b, err := os.ReadFile(seen)
	c.Assert(err, qt.IsNil)
	c.Assert(string(b), qt.Equals, "2 SlotRecorded "+flags[3]+"/md127 SlotRecorded "+flags[3]+"/md127 boot\n")
	_, err = os.Stat(store)
	c.Assert(err, qt.IsNil)
}

func fileHas(p, s string) bool {
	b, err := os.ReadFile(p)
	return err == nil && strings.Contains(string(b), s)
}

func TestWatchCLIHealNeedsStore(t *testing.T) {
	flags, _ := materialize(t, "boot-mirror")
	code, _, errOut := runCLI(t, append(flags, "watch", "--heal")...)
	qt.Assert(t, code, qt.Equals, exitUsage) // contradicting flags: a usage error
	qt.Assert(t, errOut, qt.Contains, "--heal needs --store")
}
