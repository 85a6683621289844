package md

import (
	"context"

	"github.com/go-mdraid/mdraid/sysfs"
)

// Every operation that writes has one dry-run shape: a Plan… call that
// takes what the operation takes, decides as the operation does (the
// same facts, refusals and errors), writes nothing, and returns what the
// operation would do and why; the operation itself plans again, under its
// locks, just before it writes, and writes only what that plan says.
//
//	PlanReplace  ExecuteReplace / Replace   (*Plan)
//	PlanCreate   Create                     (*CreatePlan)
//	PlanReAdd    ReAdd                      (*ReAddPlan)
//	PlanZeroSuperblock ZeroSuperblock       (*ZeroPlan)
//	PlanFail     Fail                       (*Change)
//	PlanRemove   Remove                     (*Change)
//	PlanRun      Run                        (*Change)
//	PlanStop     Stop                       (*Change)
//	PlanSetMemberFlag SetMemberFlag         (*Change)
//	PlanHeal     Heal                       ([]Decision)
//	PlanCheck    Check                      ([]CheckResult)
//	PlanAssemble Assemble                   (*AssembleResult)
//	PlanIncremental Incremental             (*IncrementalResult)
//
// The Plan… calls of the last nine are the operations with their dry-run
// switch set (a Change with DryRun, HealOptions.DryRun,
// CheckRequest.DryRun, AssembleRequest.DryRun, IncrementalRequest.DryRun),
// which stay for callers that choose at run time; mdctl's --dry-run is
// the same call.

// PlanFail is the dry run of Fail: what marking member faulty would
// write (Change.Write; empty when it is faulty already), or Fail's
// refusal or error. It writes nothing.
func (m *Manager) PlanFail(ctx context.Context, array, member string) (*Change, error) {
	ch := &Change{DryRun: true}
	return ch, m.Fail(ctx, array, member, ch)
}

// PlanRemove is the dry run of Remove: the write that would take member
// out of the array, or Remove's refusal or error. It writes nothing.
func (m *Manager) PlanRemove(ctx context.Context, array, member string) (*Change, error) {
	ch := &Change{DryRun: true}
	return ch, m.Remove(ctx, array, member, ch)
}

// PlanRun is the dry run of Run: the write that would start the inactive
// array, or Run's refusal or error. It writes nothing.
func (m *Manager) PlanRun(ctx context.Context, array string) (*Change, error) {
	ch := &Change{DryRun: true}
	return ch, m.Run(ctx, array, ch)
}

// PlanStop is the dry run of Stop: the write that would stop the array
// and what would be removed after it (Change.Removed: links, the map
// entry), or Stop's refusal (the array is in use, naming who uses it) or
// error. It writes nothing.
func (m *Manager) PlanStop(ctx context.Context, array string) (*Change, error) {
	ch := &Change{DryRun: true}
	return ch, m.Stop(ctx, array, ch)
}

// PlanSetMemberFlag is the dry run of SetMemberFlag: the state write that
// would set or clear the flag (empty when it is so already), or the
// refusal. It writes nothing.
func (m *Manager) PlanSetMemberFlag(ctx context.Context, array, member string, flag sysfs.MemberFlag, on bool) (*Change, error) {
	ch := &Change{DryRun: true}
	return ch, m.SetMemberFlag(ctx, array, member, flag, on, ch)
}

// PlanHeal is the dry run of Heal: the decision for every degraded array
// (with the replace plan it would execute), as Heal with opts.DryRun set.
// It writes nothing, not even to opts.Store.
func (m *Manager) PlanHeal(ctx context.Context, opts HealOptions) ([]Decision, error) {
	opts.DryRun = true
	return m.Heal(ctx, opts)
}

// PlanCheck is the dry run of Check: per array, what would be started,
// cancelled or skipped and why, as Check with req.DryRun set. It writes
// nothing, to the arrays or to req.Store.
func (m *Manager) PlanCheck(ctx context.Context, req CheckRequest) ([]CheckResult, error) {
	req.DryRun = true
	return m.Check(ctx, req)
}

// PlanAssemble is the dry run of Assemble: the arrays that would be made
// and started, each device's fate and every write, as Assemble with
// req.DryRun set (docs/assembly.md §11 says what a dry run cannot
// foresee). It changes nothing, not even the map file's lock.
func (m *Manager) PlanAssemble(ctx context.Context, req AssembleRequest) (*AssembleResult, error) {
	req.DryRun = true
	return m.Assemble(ctx, req)
}

// PlanIncremental is the dry run of Incremental, as Incremental with
// req.DryRun set. It changes nothing.
func (m *Manager) PlanIncremental(ctx context.Context, req IncrementalRequest) (*IncrementalResult, error) {
	req.DryRun = true
	return m.Incremental(ctx, req)
}
