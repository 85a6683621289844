package vmtest

import (
	"testing"
	"time"
)

// TestLockHostSlots holds VM slots the way concurrent boots do: one per
// one-vCPU VM up to MDRAID_VM_JOBS, and as many as its vCPUs for a larger
// VM, which waits until they are all free.
func TestLockHostSlots(t *testing.T) {
	t.Setenv(EnvCache, t.TempDir())
	t.Setenv(EnvJobs, "2")
	take := func(cpus int) func() {
		t.Helper()
		unlock, err := lockHost(cpus)
		if err != nil {
			t.Fatal(err)
		}
		return unlock
	}
	// taken starts lockHost(cpus) and returns the channel its unlock
	// arrives on.
	taken := func(cpus int) chan func() {
		ch := make(chan func(), 1)
		go func() {
			unlock, err := lockHost(cpus)
			if err != nil {
				t.Error(err)
				unlock = func() {}
			}
			ch <- unlock
		}()
		return ch
	}
	waiting := func(ch chan func(), what string) {
		t.Helper()
		select {
		case u := <-ch:
			u()
			t.Fatalf("%s got its slots while they were taken", what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	got := func(ch chan func(), what string) func() {
		t.Helper()
		select {
		case u := <-ch:
			return u
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not get its slots once they were free", what)
			return nil
		}
	}

	first, second := take(1), take(1) // two slots: both at once
	third := taken(1)
	waiting(third, "a third one-vCPU VM")
	first()
	unlockThird := got(third, "the third one-vCPU VM")

	wide := taken(2)
	waiting(wide, "a two-vCPU VM")
	second()
	waiting(wide, "a two-vCPU VM with one slot still taken")
	unlockThird()
	got(wide, "the two-vCPU VM")()

	// Jobs follows MDRAID_VM_JOBS, and the CPUs without it.
	if n := Jobs(); n != 2 {
		t.Errorf("Jobs() = %d with %s=2", n, EnvJobs)
	}
	t.Setenv(EnvJobs, "zero")
	if n := Jobs(); n < 1 {
		t.Errorf("Jobs() = %d with %s unusable", n, EnvJobs)
	}
}
