package md

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
	"github.com/go-mdraid/mdraid/sysfs"
)

// This file holds the create planner: a request and the facts of its
// devices in, every check and every write out, or a refusal. It decides
// the on-disk layout by mdadm's rules (docs/create.md records them, with
// the mdadm versions they were read from) and writes nothing.

// ErrCreateRefused is matched by every refusal of PlanCreate, together
// with ErrRefused; the *RefusedError's Check says which check failed.
var ErrCreateRefused = errors.New("md: create refused")

// Bitmap choices of a CreateRequest.
const (
	// BitmapNone creates no write-intent bitmap.
	BitmapNone = "none"
	// BitmapInternal creates an internal write-intent bitmap.
	BitmapInternal = "internal"
)

// Missing is the device name that stands for an absent member: the
// array is created degraded, with that slot empty.
const Missing = "missing"

// CreateRequest says which array to create, as mdadm --create's options
// say it.
type CreateRequest struct {
	// Array is /dev/md/NAME, /dev/mdN or a bare NAME.
	Array string
	// Level is the RAID level: 0, 1, 4, 5, 6 or 10.
	Level superblock.Level
	// RaidDevices is --raid-devices: the number of slots.
	RaidDevices int
	// Metadata is the superblock version; 0 means 1.2, mdadm's default.
	Metadata superblock.Version
	// Name is the array name (--name). Empty means the name taken from
	// Array as mdadm does: /dev/md/home and /dev/mdhome give "home",
	// /dev/md0 gives "0".
	Name string
	// Homehost is written before the name ("homehost:name") when the
	// two fit in 31 bytes and the name has no colon. Empty writes the
	// name alone.
	Homehost string
	// Bitmap is BitmapInternal or BitmapNone. Empty is BitmapNone: the
	// newest mdadm asks, and with --run (no question) creates none.
	Bitmap string
	// ChunkKiB is the chunk size in KiB for levels 0, 4, 5, 6 and 10; 0
	// means mdadm's default, 512. Levels 1 refuses a chunk size.
	ChunkKiB uint64
	// Layout is the layout name for levels 5, 6 and 10 ("left-symmetric",
	// "n2", "f2", "o3", ...). Empty means the default: left-symmetric
	// for 5 and 6, n2 for 10.
	Layout string
	// AssumeClean skips the initial resync: the superblocks say the
	// array is in sync.
	AssumeClean bool
	// SizeKiB is --size: the space used on each device, in KiB, less
	// than what the smallest device offers. 0 means all of it.
	SizeKiB uint64
	// LogicalBlockSize states the array's logical block size in bytes
	// when the devices' sizes differ. 0 means they must all agree.
	LogicalBlockSize uint32
	// Devices are the member devices in slot order; Missing leaves a
	// slot empty.
	Devices []string
	// AllowImageFile accepts regular files as devices. It exists for
	// tests; mdctl never sets it.
	AllowImageFile bool `json:"-"`
}

// CreateDevice is what was found out about one device of a create
// request, in the order of CreateRequest.Devices. A Missing slot has
// only its Path.
type CreateDevice struct {
	// Path is the device as named in the request.
	Path string
	// Missing is true for the Missing placeholder.
	Missing bool
	// SizeBytes is the device's size.
	SizeBytes int64
	// LogicalBlockSize is the device's logical block size in bytes.
	LogicalBlockSize uint32
	// Blank is what CheckBlank said of the device: nil when blank.
	Blank error
	// InUse names what holds the device (an md array it is a member of,
	// a mount, a holder, an open descriptor), or is empty when nothing
	// does.
	InUse string
	// DevNum is the device's number (0.90 descriptors record it); zero
	// for an image file.
	DevNum sysfs.DevNum
	// Unknown says which facts of the device could not be established,
	// and why; empty when all were. A device with one is refused.
	Unknown string
}

// absent reports whether d stands for an empty slot.
func (d *CreateDevice) absent() bool { return d.Missing || d.Path == Missing }

// CreateFacts are the facts PlanCreate decides on: the devices, and the
// values a create makes up (time and UUIDs), so that planning is a pure
// function and a dry run shows exactly what would be written.
type CreateFacts struct {
	// Devices has one entry for each of CreateRequest.Devices.
	Devices []CreateDevice
	// Now is the creation time written into the superblocks.
	Now time.Time
	// ArrayUUID is the new array's UUID.
	ArrayUUID uuid.UUID
	// DeviceUUIDs has one UUID for each of Devices (entries for Missing
	// slots are ignored).
	DeviceUUIDs []uuid.UUID
	// ArrayInUse says why the md device asked for cannot be made (its
	// /dev/md/NAME exists, its number is taken, ...); empty when it can.
	ArrayInUse string
	// MDMinor is the minor number of the md device the array will be
	// (0.90 md_minor, and the default name for /dev/mdN).
	MDMinor uint32
}

// CreateCheck is one check of a create plan: its name and what it
// established.
type CreateCheck struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// CreateWrite is one write of a create plan: bytes at an offset of a
// device.
type CreateWrite struct {
	// What is "superblock", "bitmap" or "bad-block log".
	What string `json:"what"`
	// Offset is the byte offset on the device.
	Offset int64 `json:"offset"`
	// Data are the bytes written.
	Data []byte `json:"-"`
}

// CreateMember is what the plan writes to one device.
type CreateMember struct {
	// Path is the device.
	Path string `json:"path"`
	// Slot is the raid slot the device will fill once the array runs.
	Slot int `json:"slot"`
	// Superblock is the superblock written to it.
	Superblock *superblock.Superblock `json:"-"`
	// Bitmap is the bitmap superblock written to it, or nil.
	Bitmap *superblock.Bitmap `json:"-"`
	// Writes are the device's writes, in order.
	Writes []CreateWrite `json:"writes"`
	// Clear are byte ranges zeroed before the writes (the bitmap and the
	// bad-block log areas), as [offset, length] pairs.
	Clear [][2]int64 `json:"clear"`
}

// CreatePlan is a planned create: every check made, and every write.
type CreatePlan struct {
	Request CreateRequest `json:"-"`
	// Name is the array name written ("homehost:name" or "name").
	Name string `json:"name"`
	// Version is the superblock version.
	Version superblock.Version `json:"metadata"`
	// Level, Layout and ChunkKiB are the array's geometry.
	Level    superblock.Level `json:"-"`
	Layout   uint32           `json:"layout"`
	ChunkKiB uint64           `json:"chunk_kib"`
	// UsedSectors is the space used on each member (the superblock's
	// size), in 512-byte sectors; 0 for raid0.
	UsedSectors uint64 `json:"used_sectors"`
	// ArraySectors is the size of the array in 512-byte sectors.
	ArraySectors uint64 `json:"array_sectors"`
	// Clean says the array starts in sync (no initial resync).
	Clean bool `json:"clean"`
	// Degraded says slots are left empty.
	Degraded bool `json:"degraded"`
	// Checks are the checks made, all passed.
	Checks []CreateCheck `json:"checks"`
	// Members are the devices written, in the order of the request.
	Members []CreateMember `json:"members"`
}

// Sizes of mdadm's reserved areas, in 512-byte sectors.
const (
	bblogSectors    = 8 // bad-block log, 4 KiB
	maxSector       = math.MaxUint64
	reserved090     = 128     // 0.90 MD_RESERVED_SECTORS
	maxDisks090     = 27      // 0.90 MD_SB_DISKS
	defaultChunkKiB = 512     // mdadm DEFAULT_CHUNK
	bitmapDelay     = 5       // mdadm DEFAULT_BITMAP_DELAY, seconds
	maxDevs1        = 1920    // mdadm MAX_DEVS for 1.x
	max090Sectors   = 4 << 31 // 4 TiB per device, 0.90 on Linux >= 3.1
)

// chooseBMSpace is mdadm's choose_bm_space: the sectors left for a
// bitmap on a device (or member) of devsize sectors.
func chooseBMSpace(devsize uint64) uint64 {
	switch {
	case devsize < 64*2:
		return 0
	case devsize-64*2 >= 200*1024*1024*2:
		return 128 * 2
	case devsize-4*2 > 8*1024*1024*2:
		return 64 * 2
	}
	return 4 * 2
}

// dataOffset1 is the data offset mdadm chooses for 1.1 and 1.2 from the
// first device's size (sectors) and the chunk in KiB (0 for raid1):
// 12 KiB, the bitmap space and up to 128 MiB of reshape headroom (about
// 0.1% of the device, not below four chunks), rounded up to 1 MiB.
func dataOffset1(devsize, chunkKiB uint64) uint64 {
	headroom := uint64(128 * 1024 * 2)
	for headroom<<10 > devsize && (chunkKiB == 0 || headroom/2 >= chunkKiB*2*2) {
		headroom >>= 1
	}
	off := 12*2 + chooseBMSpace(devsize) + headroom
	return (off + 2047) &^ 2047
}

// refuseCreate is a refusal of the create at check.
func refuseCreate(array string, check Check, format string, a ...any) error {
	return &RefusedError{Op: "create", Array: array, Check: check,
		Reason: fmt.Sprintf(format, a...), Err: ErrCreateRefused}
}

// ParseLayout parses a layout name for level as mdadm's --layout does:
// raid5 and raid6 algorithm names (also la, ra, ls, rs), raid10 nN, fN
// and oN, raid0 "original", "alternate" or "dangerous". Empty gives the
// default. ok is false for a name that does not fit the level.
func ParseLayout(level superblock.Level, s string) (layout uint32, ok bool) {
	switch level {
	case superblock.LevelRAID5, superblock.LevelRAID6:
		short := map[string]string{"la": "left-asymmetric", "ra": "right-asymmetric",
			"ls": "left-symmetric", "rs": "right-symmetric", "default": "left-symmetric", "": "left-symmetric"}
		if l, ok := short[s]; ok {
			s = l
		}
		for v := uint32(0); v <= 20; v++ {
			if level == superblock.LevelRAID5 && v > 5 {
				break
			}
			if superblock.LayoutName(level, v) == s {
				return v, true
			}
		}
		return 0, false
	case superblock.LevelRAID4:
		return 0, s == "" || s == "parity-last" || s == "default"
	case superblock.LevelRAID10:
		if s == "" || s == "default" {
			return 0x102, true
		}
		if len(s) < 2 {
			return 0, false
		}
		n, err := strconv.Atoi(s[1:])
		if err != nil || n < 1 || n > 64 {
			return 0, false
		}
		switch s[0] {
		case 'n':
			return 0x100 | uint32(n), true
		case 'f':
			return uint32(n)<<8 | 1, true
		case 'o':
			return 0x10000 | uint32(n)<<8 | 1, true
		}
		return 0, false
	case superblock.LevelRAID0:
		switch s {
		case "", "default", "original":
			return 1, true
		case "alternate":
			return 2, true
		case "dangerous":
			return 0, true
		}
		return 0, false
	}
	return 0, s == ""
}

// CreateName returns the array name mdadm writes for the md device path
// array when --name is not given: /dev/md/home and /dev/mdhome give
// "home", /dev/md0 and /dev/md/0 give "0", /dev/md_d0 gives "d0"; a bare
// name is itself.
func CreateName(array string) string {
	if !strings.HasPrefix(array, "/") {
		return array
	}
	name := filepath.Base(array)
	if filepath.Dir(array) == "/dev" {
		switch {
		case strings.HasPrefix(name, "md_") && len(name) > 3:
			return name[3:]
		case strings.HasPrefix(name, "md") && len(name) > 2 && unicode.IsDigit(rune(name[2])):
			return name[2:]
		}
	}
	return name
}

// PlanCreate decides whether req can be made on the devices of f, and
// how: it returns the plan of every check and write, or a
// *RefusedError matching ErrRefused and ErrCreateRefused whose Check
// names the check that failed. It writes nothing and reads nothing:
// everything it decides on is in req and f.
//
// The layout (data offset, superblock offset, sizes, bitmap and bad-block
// log placement, roles) is mdadm's for the same request, by the rules in
// docs/create.md. Where mdadm would warn and go on with --run, PlanCreate
// refuses: every device must be blank (CheckBlank) and unused.
func PlanCreate(req CreateRequest, f CreateFacts) (*CreatePlan, error) {
	a := req.Array
	p := &CreatePlan{Request: req, Level: req.Level, Version: req.Metadata}
	check := func(name, format string, args ...any) {
		p.Checks = append(p.Checks, CreateCheck{Name: name, Detail: fmt.Sprintf(format, args...)})
	}
	if p.Version == 0 {
		p.Version = superblock.Version12
	}
	if p.Version != superblock.Version090 && !p.Version.Is1x() {
		return nil, refuseCreate(a, CheckMetadata, "unsupported metadata %v", req.Metadata)
	}

	// Level, device count, chunk and layout.
	lv := req.Level
	n := req.RaidDevices
	minDevs := map[superblock.Level]int{
		superblock.LevelRAID0: 2, superblock.LevelRAID1: 2, superblock.LevelRAID4: 3,
		superblock.LevelRAID5: 3, superblock.LevelRAID6: 4, superblock.LevelRAID10: 2,
	}
	min, ok := minDevs[lv]
	if !ok {
		return nil, refuseCreate(a, CheckLevel, "level %v cannot be created (0, 1, 4, 5, 6 and 10 can)", lv)
	}
	if n < min {
		return nil, refuseCreate(a, CheckRaidDevices, "%v needs at least %d devices, not %d", lv, min, n)
	}
	if n > maxDevs1 {
		return nil, refuseCreate(a, CheckRaidDevices, "%d devices: at most %d", n, maxDevs1)
	}
	if len(req.Devices) != n {
		return nil, refuseCreate(a, CheckRaidDevices, "%d devices named (real or missing) for --raid-devices=%d", len(req.Devices), n)
	}
	if len(f.Devices) != n || len(f.DeviceUUIDs) != n {
		return nil, refuseCreate(a, CheckFacts, "facts for %d devices and %d device UUIDs, want %d", len(f.Devices), len(f.DeviceUUIDs), n)
	}
	check("level", "%v with %d slots", lv, n)

	chunk := req.ChunkKiB
	if lv == superblock.LevelRAID1 {
		if chunk != 0 {
			return nil, refuseCreate(a, CheckChunk, "a chunk size is not meaningful for raid1")
		}
	} else {
		if chunk == 0 {
			chunk = defaultChunkKiB
		}
		if chunk < 4 || chunk&(chunk-1) != 0 || chunk > 1<<20 {
			return nil, refuseCreate(a, CheckChunk, "chunk %d KiB: must be a power of two from 4 KiB to 1 GiB", chunk)
		}
	}
	p.ChunkKiB = chunk
	layout, ok := ParseLayout(lv, req.Layout)
	if !ok {
		return nil, refuseCreate(a, CheckLayout, "layout %q is not one of %v's", req.Layout, lv)
	}
	if lv == superblock.LevelRAID10 {
		copies := int(layout&255) * int(layout>>8&255)
		if copies > n {
			return nil, refuseCreate(a, CheckLayout, "layout %s needs at least %d devices", req.Layout, copies)
		}
	}
	p.Layout = layout
	switch req.Bitmap {
	case "", BitmapNone, BitmapInternal:
	default:
		return nil, refuseCreate(a, CheckBitmap, "--bitmap=%s: internal or none", req.Bitmap)
	}
	bitmap := req.Bitmap == BitmapInternal
	if bitmap && lv == superblock.LevelRAID0 {
		return nil, refuseCreate(a, CheckBitmap, "a bitmap is not meaningful for raid0")
	}
	if req.SizeKiB != 0 && lv == superblock.LevelRAID0 {
		return nil, refuseCreate(a, CheckLevel, "--size is not meaningful for raid0")
	}

	// Name.
	name := req.Name
	if name == "" {
		name = CreateName(a)
	}
	if name == "" {
		name = strconv.Itoa(int(f.MDMinor))
	}
	full := name
	if req.Homehost != "" && !strings.Contains(name, ":") && len(req.Homehost)+1+len(name) < 32 {
		full = req.Homehost + ":" + name
	}
	if p.Version.Is1x() && len(full) > 31 {
		return nil, refuseCreate(a, CheckName, "name %q is %d bytes: at most 31 fit (mdadm would cut it)", full, len(full))
	}
	p.Name = full
	check("name", "%q", full)
	if f.ArrayInUse != "" {
		return nil, refuseCreate(a, CheckArrayDevice, "%s", f.ArrayInUse)
	}

	// Devices: present, blank, unused, one block size.
	var first *CreateDevice
	missing, firstMissing := 0, n
	lbs := uint32(0)
	seen := map[string]bool{}
	var taken []string
	var takenCheck Check
	var blanks []error
	for i := range f.Devices {
		d := &f.Devices[i]
		if d.Path != req.Devices[i] {
			return nil, refuseCreate(a, CheckFacts, "facts for %s in place of %s", d.Path, req.Devices[i])
		}
		if d.absent() {
			missing++
			if firstMissing == n {
				firstMissing = i
			}
			continue
		}
		if seen[d.Path] {
			return nil, refuseCreate(a, CheckDevices, "%s is named twice", d.Path)
		}
		seen[d.Path] = true
		if d.Unknown != "" {
			return nil, refuseCreate(a, CheckFacts, "%s: cannot establish %s", d.Path, d.Unknown)
		}
		// A device in use or not blank is named with every other one:
		// all that is in the way (what a killed create left, say) is
		// said at once.
		if d.InUse != "" {
			taken = append(taken, fmt.Sprintf("%s is in use: %s", d.Path, d.InUse))
			takenCheck = cmp.Or(takenCheck, CheckNotInUse)
			continue
		}
		if d.Blank != nil {
			taken = append(taken, fmt.Sprintf("%s: %v", d.Path, d.Blank))
			takenCheck = cmp.Or(takenCheck, CheckBlankDevice)
			blanks = append(blanks, d.Blank)
			continue
		}
		if d.LogicalBlockSize == 0 || d.LogicalBlockSize%512 != 0 || d.LogicalBlockSize&(d.LogicalBlockSize-1) != 0 {
			return nil, refuseCreate(a, CheckBlockSize, "%s: logical block size %d is not known", d.Path, d.LogicalBlockSize)
		}
		switch {
		case req.LogicalBlockSize != 0:
			if d.LogicalBlockSize > req.LogicalBlockSize {
				return nil, refuseCreate(a, CheckBlockSize, "%s has %d-byte logical blocks, more than the %d stated", d.Path, d.LogicalBlockSize, req.LogicalBlockSize)
			}
		case lbs == 0:
			lbs = d.LogicalBlockSize
		case lbs != d.LogicalBlockSize:
			return nil, refuseCreate(a, CheckBlockSize, "%s has %d-byte logical blocks and %s %d: state the array's block size to mix them",
				d.Path, d.LogicalBlockSize, first.Path, lbs)
		}
		if first == nil {
			first = d
		}
	}
	if len(taken) > 0 {
		r := refuseCreate(a, takenCheck, "%s", strings.Join(taken, "; "))
		if len(blanks) > 0 {
			r.(*RefusedError).Err = errors.Join(append([]error{ErrCreateRefused}, blanks...)...)
		}
		return nil, r
	}
	if first == nil {
		return nil, refuseCreate(a, CheckDevices, "every device is missing")
	}
	if missing > 0 {
		maxMissing := 0
		switch lv {
		case superblock.LevelRAID1:
			maxMissing = n - 1
		case superblock.LevelRAID4, superblock.LevelRAID5:
			maxMissing = 1
		case superblock.LevelRAID6:
			maxMissing = 2
		case superblock.LevelRAID10:
			maxMissing = r10MaxMissing(layout, n, f.Devices)
		}
		if missing > maxMissing {
			return nil, refuseCreate(a, CheckMissing, "%v cannot start with %d of %d devices missing", lv, missing, n)
		}
		p.Degraded = true
	}
	check("devices", "%d devices blank and unused, %d missing", n-missing, missing)
	if req.LogicalBlockSize != 0 {
		check("block-size", "stated %d bytes", req.LogicalBlockSize)
	} else {
		check("block-size", "%d bytes on every device", lbs)
	}

	// Sizes (validate_geometry1 and Create).
	devSectors := func(d *CreateDevice) uint64 { return uint64(d.SizeBytes) / 512 }
	var dataOff uint64
	switch p.Version {
	case superblock.Version11, superblock.Version12:
		dataOff = dataOffset1(devSectors(first), chunk) // 0 for raid1
	}
	minFree := uint64(math.MaxUint64)
	var minDev string
	for i := range f.Devices {
		d := &f.Devices[i]
		if d.absent() {
			continue
		}
		ds := devSectors(d)
		var free uint64
		var overhead uint64
		switch p.Version {
		case superblock.Version10:
			ds &^= 7
			overhead = 16 + bblogSectors + chooseBMSpace(devSectors(d))
		case superblock.Version090:
			// MD_NEW_SIZE_SECTORS: the superblock's 64 KiB at the last
			// 64 KiB boundary but one; the data is everything before.
			if ds < 2*reserved090 {
				return nil, refuseCreate(a, CheckSize, "%s is too small: %d sectors cannot hold 0.90 metadata (%d sectors)", d.Path, ds, 2*reserved090)
			}
			overhead = ds - (ds&^(reserved090-1) - reserved090)
		default:
			overhead = dataOff
		}
		if ds < 24 || ds <= overhead {
			return nil, refuseCreate(a, CheckSize, "%s is too small: %d sectors cannot hold the metadata (%d sectors)", d.Path, devSectors(d), overhead)
		}
		free = (ds - overhead) / 2 // KiB
		if chunk != 0 {
			free &^= chunk - 1
		}
		if free == 0 {
			return nil, refuseCreate(a, CheckSize, "%s is too small: no space left after the metadata (%d sectors) and chunk rounding (%d KiB)", d.Path, overhead, chunk)
		}
		if req.SizeKiB != 0 && free < req.SizeKiB {
			return nil, refuseCreate(a, CheckSize, "%s is too small: %d KiB usable, %d KiB asked (--size)", d.Path, free, req.SizeKiB)
		}
		if free < minFree {
			minFree, minDev = free, d.Path
		}
	}
	sizeKiB := minFree
	if req.SizeKiB != 0 {
		sizeKiB = req.SizeKiB
		if chunk != 0 {
			sizeKiB &^= chunk - 1
			if sizeKiB == 0 {
				return nil, refuseCreate(a, CheckSize, "--size %d KiB is less than a chunk (%d KiB)", req.SizeKiB, chunk)
			}
		}
	}
	if lv == superblock.LevelRAID1 {
		sizeKiB &^= 63
		if sizeKiB == 0 {
			return nil, refuseCreate(a, CheckSize, "%s is too small: less than 64 KiB usable", minDev)
		}
	}
	if lv == superblock.LevelRAID0 {
		p.UsedSectors = 0
	} else {
		p.UsedSectors = sizeKiB * 2
	}
	check("size", "%d KiB used on each device (smallest: %s)", sizeKiB, minDev)

	// Clean or resync, and which slot becomes a spare that recovery
	// fills (raid4/5: the last; raid6 with one missing: the last present).
	p.Clean = req.AssumeClean || lv == superblock.LevelRAID0
	insert := -1
	switch {
	case p.Clean:
	case (lv == superblock.LevelRAID4 || lv == superblock.LevelRAID5) && missing == 0:
		insert = n - 1
	case (lv == superblock.LevelRAID4 || lv == superblock.LevelRAID5) && missing > 0:
		p.Clean = true
	case lv == superblock.LevelRAID6 && missing == 1:
		insert = n - 1
		if insert == firstMissing {
			insert--
		}
	case lv == superblock.LevelRAID6 && missing == 2:
		p.Clean = true
	}

	// Device numbers and roles, as mdadm's two-pass add: the device at
	// insert is added last, as a spare with the next number.
	type slot = createSlot
	var slots []slot
	for i := range f.Devices {
		if i == insert || f.Devices[i].absent() {
			continue
		}
		slots = append(slots, slot{dev: i, number: uint32(i), role: superblock.Role(i), slot: i})
	}
	if insert >= 0 {
		slots = append(slots, slot{dev: insert, number: uint32(n), role: superblock.RoleSpare, slot: insert})
	}
	spares := 0
	if insert >= 0 {
		spares = 1
	}
	maxDev := ((256+2*(n+spares)+511)&^511 - 256) / 2
	roles := make([]superblock.Role, maxDev)
	for i := range roles {
		roles[i] = superblock.RoleSpare
	}
	for _, s := range slots {
		roles[s.number] = s.role
	}

	// Bitmap geometry (add_internal_bitmap1, on create).
	var bmChunk uint32
	var bmOffset int32
	var bmSync uint64
	if bitmap {
		bmSync = p.UsedSectors
		if lv == superblock.LevelRAID10 {
			copies := uint64(layout&255) * uint64(layout>>8&255)
			bmSync = sizeKiB * uint64(n) / copies * 2
		}
		room := chooseBMSpace(p.UsedSectors)
		if room > 128*2 {
			room = 128 * 2
		}
		if p.Version == superblock.Version090 {
			// add_internal_bitmap0: right after the superblock, 60 KiB.
			room = 60 * 2
		}
		if room <= 1 {
			return nil, refuseCreate(a, CheckBitmap, "no room for a bitmap on members of %d sectors", p.UsedSectors)
		}
		maxBits := (room*512 - superblock.BitmapSize) * 8
		minChunk := uint64(4096)
		bits := bmSync*512/minChunk + 1
		for bits > maxBits {
			minChunk *= 2
			bits = (bits + 1) / 2
		}
		c := minChunk
		if c < 64<<20 {
			c = 64 << 20
		}
		if c > math.MaxUint32 {
			return nil, refuseCreate(a, CheckBitmap, "bitmap chunk %d bytes does not fit", c)
		}
		bmChunk = uint32(c)
		switch p.Version {
		case superblock.Version090:
			bmOffset = 8
		case superblock.Version10:
			bits := bmSync*512/c + 1
			r := ((bits+7)/8 + superblock.BitmapSize + 4095) / 4096 * 8
			bmOffset = -int32(r) - bblogSectors
		default:
			bmOffset = 8
		}
		check("bitmap", "internal, %d KiB chunks, at %d sectors from the superblock", c>>10, bmOffset)
	}
	bmSpaceFor := func() (space uint64, offset int64) {
		if bitmap {
			bits := (bmSync + uint64(bmChunk)/512 - 1) / (uint64(bmChunk) / 512)
			bytes := (bits+7)/8 + superblock.BitmapSize
			return (bytes + 4095) &^ 4095 / 512, int64(bmOffset)
		}
		return chooseBMSpace(p.UsedSectors), 8
	}

	var features superblock.FeatureMap
	if bitmap {
		features |= superblock.FeatureBitmapOffset
	}
	if lv == superblock.LevelRAID0 && layout != 0 {
		// mdadm 4.3 and later, on Linux 5.4 and later.
		features |= superblock.FeatureRAID0Layout
	}
	// The superblocks say clean (resync_offset all ones) when no
	// resync is to run: also when a raid4/5/6 starts with a device out
	// (missing, or the spare recovery fills): the kernel refuses to start
	// a degraded array that is not clean ("cannot start dirty degraded
	// array"), and recovery, not resync, makes the spare consistent
	// (mdadm Create.c, info.array.state).
	resync := uint64(0)
	if p.Clean || insert >= 0 {
		resync = maxSector
	}
	ctime := uint64(f.Now.Unix()) & (1<<40 - 1)

	if p.Version == superblock.Version090 {
		return plan090(p, req, f, slots, n, spares, missing, resync == maxSector, bitmap, bmSync, bmChunk, sizeKiB, check)
	}

	var raid0Sectors uint64
	for _, s := range slots {
		d := &f.Devices[s.dev]
		dsize := devSectors(d)
		sb := &superblock.Superblock{
			Version:      p.Version,
			Features:     features,
			SetUUID:      f.ArrayUUID,
			CTime:        ctime,
			UTime:        ctime,
			Level:        lv,
			Layout:       layout,
			Size:         p.UsedSectors,
			ChunkSize:    chunk * 1024,
			RaidDisks:    uint32(n),
			DevNumber:    s.number,
			DeviceUUID:   f.DeviceUUIDs[s.dev],
			Events:       0,
			ResyncOffset: resync,
			DevRoles:     append([]superblock.Role(nil), roles...),
		}
		if err := sb.SetFullName(full); err != nil {
			return nil, refuseCreate(a, CheckName, "%v", err)
		}
		bmSpace, bmOff := bmSpaceFor()
		if bitmap {
			sb.BitmapOffset = bmOffset
		}
		switch p.Version {
		case superblock.Version10:
			bmSpace += bblogSectors
			sbOff := (dsize - 16) &^ 7
			sb.SuperOffset = sbOff
			if sbOff < p.UsedSectors+bmSpace {
				bmSpace = sbOff - p.UsedSectors
			}
			sb.DataSize = sbOff - bmSpace
			if bmSpace >= bblogSectors {
				sb.BBLogSize = bblogSectors
				sb.BBLogOffset = -bblogSectors
			}
		default:
			sbOff := uint64(0)
			if p.Version == superblock.Version12 {
				sbOff = 8
			}
			sb.SuperOffset = sbOff
			sb.DataOffset = dataOff
			sb.DataSize = dsize - dataOff
			switch {
			case dataOff >= sbOff+uint64(bmOff)+bmSpace+8:
				sb.BBLogSize = bblogSectors
				sb.BBLogOffset = int32(uint64(bmOff) + bmSpace)
			case dataOff >= sbOff+16:
				sb.BBLogSize = bblogSectors
				sb.BBLogOffset = int32(dataOff - 8 - sbOff)
			}
		}
		if p.UsedSectors > sb.DataSize {
			return nil, refuseCreate(a, CheckSize, "%s is too small: %d sectors for data, %d needed", d.Path, sb.DataSize, p.UsedSectors)
		}
		if lv == superblock.LevelRAID0 {
			raid0Sectors += sb.DataSize &^ (chunk*2 - 1)
		}
		enc, err := sb.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("md: create %s: encoding the superblock of %s: %w", a, d.Path, err)
		}
		m := CreateMember{Path: d.Path, Slot: s.slot, Superblock: sb}
		sbByte := int64(sb.SuperOffset) * 512
		if sb.BBLogSize != 0 {
			m.Clear = append(m.Clear, [2]int64{sbByte + int64(sb.BBLogOffset)*512, int64(sb.BBLogSize) * 512})
		}
		m.Writes = append(m.Writes, CreateWrite{What: "superblock", Offset: sbByte, Data: enc})
		if bitmap {
			// As mdadm (add_internal_bitmap1, write_bitmap1): first
			// use, clean with --assume-clean, and every bit set (the
			// header's 4 KiB block and the bits up to the next 4 KiB
			// written 0xff): the first start syncs what the bits say,
			// which is everything unless the superblocks say clean.
			bm := &superblock.Bitmap{
				Version:     superblock.BitmapMajorHi,
				UUID:        sb.BitmapUUID(),
				SyncSize:    bmSync,
				ChunkSize:   bmChunk,
				DaemonSleep: bitmapDelay,
				State:       superblock.BitmapFirstUse,
			}
			if req.AssumeClean {
				bm.State |= superblock.BitmapClean
			}
			hdr, err := bm.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("md: create %s: encoding the bitmap of %s: %w", a, d.Path, err)
			}
			bits := (bmSync + uint64(bmChunk)/512 - 1) / (uint64(bmChunk) / 512)
			towrite := (uint64(len(hdr)) + (bits+7)/8 + 4095) &^ 4095
			if towrite > uint64(bmSpace)*512 {
				return nil, refuseCreate(a, CheckBitmap, "the bitmap (%d bytes) does not fit its area (%d bytes)", towrite, uint64(bmSpace)*512)
			}
			benc := bytes.Repeat([]byte{0xff}, int(towrite))
			copy(benc, hdr)
			bmByte := sbByte + int64(bmOffset)*512
			m.Bitmap = bm
			m.Clear = append(m.Clear, [2]int64{bmByte, int64(bmSpace) * 512})
			m.Writes = append(m.Writes, CreateWrite{What: "bitmap", Offset: bmByte, Data: benc})
		}
		p.Members = append(p.Members, m)
	}
	p.ArraySectors = arraySectors(lv, layout, n, p.UsedSectors, chunk, raid0Sectors)
	check("array-size", "%d sectors", p.ArraySectors)
	return p, nil
}

// r10MaxMissing is how many devices a raid10 of layout may start
// without: at most copies-1 in any group of near copies (far and offset
// layouts: only one missing is certain to be safe).
func r10MaxMissing(layout uint32, n int, devs []CreateDevice) int {
	near := int(layout & 255)
	far := int(layout >> 8 & 255)
	if far > 1 {
		return 0
	}
	// near: each run of `near` consecutive slots (wrapping) must keep one.
	for start := 0; start < n; start++ {
		all := true
		for k := 0; k < near; k++ {
			if !devs[(start+k)%n].absent() {
				all = false
				break
			}
		}
		if all {
			return 0
		}
	}
	return n
}

// arraySectors is the array size the kernel computes for members using
// used sectors each (raid0: the members' data sizes rounded to chunks,
// summed in raid0Sectors).
func arraySectors(lv superblock.Level, layout uint32, n int, used, chunkKiB, raid0Sectors uint64) uint64 {
	switch lv {
	case superblock.LevelRAID0:
		return raid0Sectors
	case superblock.LevelRAID1:
		return used
	case superblock.LevelRAID4, superblock.LevelRAID5:
		return used * uint64(n-1)
	case superblock.LevelRAID6:
		return used * uint64(n-2)
	case superblock.LevelRAID10:
		c := chunkKiB * 2
		near := uint64(layout & 255)
		far := uint64(layout >> 8 & 255)
		s := used / c
		s /= far
		s = s * uint64(n) / near
		return s * c
	}
	return 0
}
