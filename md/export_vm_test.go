//go:build vmtest

package md

// md's VM test helpers, for the VM tests of the external test package
// (md_test), which can import md/watch and md/store.
var (
	CreateArray    = createArray
	VMManager      = vmManager
	ReadDiskState  = readDiskState
	ChangedOutside = changedOutside
	KilledReplace  = killedReplace
)

// RunDirOf returns the directory of m's lock and freeze files.
func RunDirOf(m *Manager) string { return m.ops.runDir }
