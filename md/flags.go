package md

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mdraid/mdraid/sysfs"
)

// errFlagLevel means the flag has no meaning for the array's level.
var errFlagLevel = errors.New("md: the flag does not apply to this level")

// decideFlag is the decision behind SetMemberFlag: the member and the
// write that sets or clears the flag ("" when it is so already).
func decideFlag(s *snapshot, member string, flag sysfs.MemberFlag, on bool) (*memberSnap, sysfs.MemberCommand, error) {
	if why := unreadFacts(s, "array_state", "level", "members"); why != "" {
		return nil, "", fmt.Errorf("%w: could not read %s", errUnknownFact, why)
	}
	var cmd sysfs.MemberCommand
	switch flag {
	case sysfs.FlagWriteMostly:
		// md reads from other mirrors first: only raid1 reads from a
		// chosen member (raid1.c read_balance).
		if s.level != "raid1" {
			return nil, "", fmt.Errorf("%w: write-mostly is a raid1 flag; %s is %s", errFlagLevel, s.name, s.level)
		}
		cmd = sysfs.CmdClearWriteMostly
		if on {
			cmd = sysfs.CmdWriteMostly
		}
	case sysfs.FlagFailFast:
		// Only raid1 and raid10 act on it (fewer retries, then fail).
		if s.level != "raid1" && s.level != "raid10" {
			return nil, "", fmt.Errorf("%w: failfast is a raid1 and raid10 flag; %s is %s", errFlagLevel, s.name, s.level)
		}
		cmd = sysfs.CmdClearFailFast
		if on {
			cmd = sysfs.CmdFailFast
		}
	default:
		return nil, "", fmt.Errorf("md: %q is not a flag SetMemberFlag changes (write_mostly, failfast)", flag)
	}
	if s.state == sysfs.StateInactive || s.state == sysfs.StateClear {
		return nil, "", fmt.Errorf("%w: %s is not running", errArrayNotRunning, s.name)
	}
	ms := memberOf(s, member)
	if ms == nil {
		return nil, "", fmt.Errorf("%w: %s is not a member of %s", errNoMember, member, s.name)
	}
	if err := unreadMember(ms); err != nil {
		return nil, "", err
	}
	if ms.state.Failed() {
		return nil, "", fmt.Errorf("%w: %s is faulty", errNoMember, member)
	}
	if ms.state.Has(flag) == on {
		return ms, "", nil
	}
	return ms, cmd, nil
}

// errArrayNotRunning means the array is not running.
var errArrayNotRunning = errors.New("md: the array is not running")

// SetMemberFlag sets (on) or clears a member's write-mostly or failfast
// flag (sysfs.FlagWriteMostly, sysfs.FlagFailFast), as mdadm --manage
// --writemostly/--readwrite and --failfast/--nofailfast do: one write to
// md/dev-MEMBER/state, which md keeps in the member's superblock
// (devflags), so it lasts across a restart. Write-mostly is refused for
// levels other than raid1 and failfast for levels other than raid1 and
// raid10 (md ignores them there), and a member that is faulty, not the
// array's, or whose state cannot be read is refused: each a
// *RefusedError. A flag that is so already writes nothing (change's Write
// stays empty). After the write it reads the state back and fails if the
// flag did not change. change, at most one, asks for a dry run and tells
// what was written (see Change).
func (m *Manager) SetMemberFlag(ctx context.Context, array, member string, flag sysfs.MemberFlag, on bool, change ...*Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := changeOf(change)
	name, err := m.resolve(array)
	if err != nil {
		return refuseLookup("set", array, member, err)
	}
	s := m.read(name)
	ms, cmd, err := decideFlag(s, m.memberName(member), flag, on)
	if err != nil {
		return refuse("set", name, member, err)
	}
	ch.Array, ch.Member = name, ms.Device
	if cmd == "" {
		return nil
	}
	ch.Write = fmt.Sprintf("dev-%s/state=%s", ms.Device, cmd)
	if ch.DryRun {
		return nil
	}
	if err := m.ops.k.WriteState(name, ms.Device, cmd); err != nil {
		return fmt.Errorf("md: writing %s of %s: %w", ch.Write, name, err)
	}
	// The state reads back the flag at once (md.c state_store).
	deadline := time.Now().Add(time.Second)
	for {
		a, err := m.fs.Array(name)
		if err == nil {
			var mem sysfs.Member
			if mem, err = a.Member(ms.Device); err == nil {
				var st sysfs.MemberState
				if st, err = mem.State(); err == nil && st.Has(flag) == on {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("md: wrote %s of %s, but the member's state does not show it: %v", ch.Write, name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
