package main

import (
	"strings"
	"time"

	"github.com/go-mdraid/mdraid/cmd/mdctl/internal/examine"
	"github.com/go-mdraid/mdraid/superblock"
)

// The JSON schema of `mdctl examine --json`, documented in
// EXAMINE-JSON.md. Keep both in step; fields are only ever added.

type jsonReport struct {
	Device     string          `json:"device"`
	SizeBytes  int64           `json:"size_bytes"`
	Status     string          `json:"status"`
	ExitCode   int             `json:"exit_code"`
	Error      string          `json:"error,omitempty"`
	Problems   []string        `json:"problems,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Notes      []string        `json:"notes,omitempty"`
	Candidates []jsonCandidate `json:"candidates"`
	Superblock *jsonSuperblock `json:"superblock,omitempty"`
	Bitmap     *jsonBitmap     `json:"bitmap,omitempty"`
	BadBlocks  []jsonBadBlock  `json:"bad_blocks,omitempty"`
	PPL        *jsonPPL        `json:"ppl,omitempty"`
}

type jsonCandidate struct {
	Version     string `json:"version"`
	OffsetBytes int64  `json:"offset_bytes"`
	Chosen      bool   `json:"chosen"`
	Error       string `json:"error,omitempty"`
}

type jsonChecksum struct {
	Stored   uint32 `json:"stored"`
	Computed uint32 `json:"computed"`
	Correct  bool   `json:"correct"`
}

type jsonRole struct {
	Kind string `json:"kind"`
	Slot *int   `json:"slot,omitempty"`
	Text string `json:"text"`
}

type jsonSuperblock struct {
	Version            string       `json:"version"`
	ByteOrder          string       `json:"byte_order"`
	OffsetBytes        int64        `json:"offset_bytes"`
	ArrayUUID          string       `json:"array_uuid"`
	Name               string       `json:"name"`
	Homehost           string       `json:"homehost"`
	CreationTime       string       `json:"creation_time"`
	UpdateTime         string       `json:"update_time"`
	Level              int32        `json:"level"`
	LevelName          string       `json:"level_name"`
	Layout             uint32       `json:"layout"`
	LayoutName         string       `json:"layout_name,omitempty"`
	RaidDevices        uint32       `json:"raid_devices"`
	ChunkBytes         uint64       `json:"chunk_bytes"`
	UsedDevSizeSectors uint64       `json:"used_dev_size_sectors"`
	ArraySizeSectors   *uint64      `json:"array_size_sectors,omitempty"`
	State              string       `json:"state"`
	Events             uint64       `json:"events"`
	Checksum           jsonChecksum `json:"checksum"`
	Role               jsonRole     `json:"role"`
	Reshape            *jsonReshape `json:"reshape,omitempty"`
	V1                 *jsonV1      `json:"v1,omitempty"`
	V090               *jsonV090    `json:"v090,omitempty"`
}

type jsonReshape struct {
	PositionSectors uint64 `json:"position_sectors"`
	DeltaDisks      int32  `json:"delta_disks"`
	NewLevel        int32  `json:"new_level"`
	NewLayout       uint32 `json:"new_layout"`
	NewChunkBytes   uint64 `json:"new_chunk_bytes"`
	Backwards       bool   `json:"backwards"`
}

type jsonUnused struct {
	BeforeSectors uint64 `json:"before_sectors"`
	AfterSectors  int64  `json:"after_sectors"`
}

type jsonPPLGeometry struct {
	OffsetSectors int16  `json:"offset_sectors"`
	SizeSectors   uint16 `json:"size_sectors"`
}

type jsonBBLog struct {
	OffsetSectors    int32  `json:"offset_sectors"`
	SizeSectors      uint16 `json:"size_sectors"`
	Shift            uint8  `json:"shift"`
	EntriesAvailable int    `json:"entries_available"`
	BadBlocksPresent bool   `json:"bad_blocks_present"`
}

type jsonV1 struct {
	FeatureMap            uint32           `json:"feature_map"`
	Features              []string         `json:"features"`
	SetName               string           `json:"set_name"`
	DeviceUUID            string           `json:"device_uuid"`
	DevNumber             uint32           `json:"dev_number"`
	MaxDev                int              `json:"max_dev"`
	DataOffsetSectors     uint64           `json:"data_offset_sectors"`
	AvailDevSizeSectors   uint64           `json:"avail_dev_size_sectors"`
	SuperOffsetSectors    uint64           `json:"super_offset_sectors"`
	LogicalBlockSizeBytes uint32           `json:"logical_block_size_bytes"`
	UnknownFields         []jsonUnknown    `json:"unknown_fields,omitempty"`
	NewOffsetSectors      *int32           `json:"new_offset_sectors,omitempty"`
	RecoveryOffsetSectors *uint64          `json:"recovery_offset_sectors,omitempty"`
	ResyncOffsetSectors   uint64           `json:"resync_offset_sectors"`
	UnusedSpace           *jsonUnused      `json:"unused_space,omitempty"`
	BitmapOffsetSectors   *int32           `json:"bitmap_offset_sectors,omitempty"`
	PPL                   *jsonPPLGeometry `json:"ppl,omitempty"`
	BadBlockLog           *jsonBBLog       `json:"bad_block_log,omitempty"`
	DevFlags              []string         `json:"dev_flags"`
	CntCorrectedRead      uint32           `json:"cnt_corrected_read"`
	ArrayState            string           `json:"array_state"`
	ArrayStateConsistent  bool             `json:"array_state_consistent"`
	DevRoles              []string         `json:"dev_roles"`
}

type jsonUnknown struct {
	Name        string `json:"name"`
	OffsetBytes int64  `json:"offset_bytes"`
	Value       uint32 `json:"value"`
}

type jsonDisk struct {
	Index    int      `json:"index"`
	Number   uint32   `json:"number"`
	Major    uint32   `json:"major"`
	Minor    uint32   `json:"minor"`
	RaidDisk uint32   `json:"raid_disk"`
	State    []string `json:"state"`
}

type jsonV090 struct {
	MinorVersion   uint32     `json:"minor_version"`
	PatchVersion   uint32     `json:"patch_version"`
	PreferredMinor uint32     `json:"preferred_minor"`
	TotalDevices   uint32     `json:"total_devices"`
	ActiveDevices  uint32     `json:"active_devices"`
	WorkingDevices uint32     `json:"working_devices"`
	FailedDevices  uint32     `json:"failed_devices"`
	SpareDevices   uint32     `json:"spare_devices"`
	NotPersistent  bool       `json:"not_persistent"`
	StateFlags     []string   `json:"state_flags"`
	ThisDisk       jsonDisk   `json:"this_disk"`
	Disks          []jsonDisk `json:"disks"`
}

type jsonBitmap struct {
	Version         uint32   `json:"version"`
	UUID            string   `json:"uuid"`
	Events          uint64   `json:"events"`
	EventsCleared   uint64   `json:"events_cleared"`
	SyncSizeSectors uint64   `json:"sync_size_sectors"`
	ChunkBytes      uint64   `json:"chunk_bytes"`
	DaemonSleepSecs uint32   `json:"daemon_sleep_seconds"`
	WriteBehind     uint32   `json:"write_behind"`
	Nodes           uint32   `json:"nodes"`
	State           []string `json:"state"`
	// Lockless counts the chunk states of a lockless bitmap (version 6);
	// LocklessError says why they were not read.
	Lockless      *jsonLLBitmap `json:"lockless,omitempty"`
	LocklessError string        `json:"lockless_error,omitempty"`
}

// jsonLLBitmap is a lockless bitmap's chunks: their number, the bytes
// each covers, and how many are in each state.
type jsonLLBitmap struct {
	Chunks     uint64            `json:"chunks"`
	ChunkBytes uint64            `json:"chunk_bytes"`
	States     map[string]uint64 `json:"states"`
	Invalid    uint64            `json:"invalid"`
	ToSync     uint64            `json:"to_sync"`
}

// llBitmapJSON is the JSON of counts of the lockless bitmap bm.
func llBitmapJSON(bm *superblock.Bitmap, c *superblock.LLBitmapCounts) *jsonLLBitmap {
	chunks, chunkBytes, _ := bm.LLChunks()
	j := &jsonLLBitmap{Chunks: chunks, ChunkBytes: chunkBytes, States: map[string]uint64{}, Invalid: c.Invalid, ToSync: c.ToSync()}
	for s, n := range c.ByState {
		j.States[superblock.LLBitmapState(s).String()] = n
	}
	return j
}

type jsonBadBlock struct {
	Sector        uint64 `json:"sector"`
	LengthSectors uint64 `json:"length_sectors"`
}

type jsonPPL struct {
	Signature    uint32 `json:"signature"`
	Generation   uint64 `json:"generation"`
	EntriesCount uint32 `json:"entries_count"`
	Checksum     uint32 `json:"checksum"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func roleJSON(sb *superblock.Superblock) jsonRole {
	r := sb.Role()
	j := jsonRole{Text: sb.RoleText()}
	switch {
	case r == superblock.RoleSpare:
		j.Kind = "spare"
	case r == superblock.RoleFaulty:
		j.Kind = "faulty"
	case r == superblock.RoleJournal:
		j.Kind = "journal"
	case !r.IsSlot():
		j.Kind = "invalid"
	default:
		j.Kind = "active"
		if sb.Version.Is1x() && sb.Features&superblock.FeatureReplacement != 0 {
			j.Kind = "replacement"
		}
		slot := int(r)
		j.Slot = &slot
	}
	return j
}

func diskJSON(i int, d superblock.Descriptor) jsonDisk {
	var state []string
	if d.State != 0 {
		state = d.State.Words()
	}
	return jsonDisk{Index: i, Number: d.Number, Major: d.Major, Minor: d.Minor, RaidDisk: d.RaidDisk, State: nonNil(state)}
}

func flagList(s string) []string {
	if s == "0" || s == "" {
		return []string{}
	}
	return strings.Split(s, "|")
}

func toJSON(rep *examine.Report) jsonReport {
	j := jsonReport{
		Device:     rep.Device,
		SizeBytes:  rep.Size,
		Status:     rep.Status.String(),
		ExitCode:   int(rep.Status),
		Error:      errString(rep.Err),
		Candidates: []jsonCandidate{},
	}
	for _, p := range rep.Problems {
		j.Problems = append(j.Problems, p.Error())
	}
	j.Warnings = warnings(rep)
	j.Notes = notes(rep)
	if rep.Probe != nil {
		for i, c := range rep.Probe.Candidates {
			j.Candidates = append(j.Candidates, jsonCandidate{
				Version:     c.Version.String(),
				OffsetBytes: c.Offset,
				Chosen:      rep.Probe.Chosen == i,
				Error:       errString(c.Err),
			})
		}
	}
	sb := rep.Superblock()
	if sb == nil {
		return j
	}
	order := "little"
	if sb.ByteOrder != nil && sb.ByteOrder.String() == "BigEndian" {
		order = "big"
	}
	js := &jsonSuperblock{
		Version:            sb.Version.String(),
		ByteOrder:          order,
		OffsetBytes:        sb.DiskOffset,
		ArrayUUID:          sb.SetUUID.String(),
		Name:               sb.Name(),
		Homehost:           sb.Homehost(),
		CreationTime:       rfc3339(sb.Created()),
		UpdateTime:         rfc3339(sb.Updated()),
		Level:              int32(sb.Level),
		LevelName:          levelName(sb.Level),
		Layout:             sb.Layout,
		LayoutName:         sb.LayoutName(),
		RaidDevices:        sb.RaidDisks,
		ChunkBytes:         sb.ChunkSize,
		UsedDevSizeSectors: sb.Size,
		State:              sb.StateText(),
		Events:             sb.Events,
		Role:               roleJSON(sb),
	}
	if size, ok := sb.ArraySize(); ok {
		s := size / 512
		js.ArraySizeSectors = &s
	}
	c := sb.ComputedChecksum()
	js.Checksum = jsonChecksum{Stored: sb.Checksum, Computed: c, Correct: c == sb.Checksum}
	if sb.Reshaping() {
		js.Reshape = &jsonReshape{
			PositionSectors: sb.ReshapePosition,
			DeltaDisks:      sb.DeltaDisks,
			NewLevel:        int32(sb.NewLevel),
			NewLayout:       sb.NewLayout,
			NewChunkBytes:   sb.NewChunk,
			Backwards:       sb.Features&superblock.FeatureReshapeBackwards != 0,
		}
	}
	if sb.Version == superblock.Version090 {
		v := &jsonV090{
			MinorVersion:   sb.MinorVersion,
			PatchVersion:   sb.PatchVersion,
			PreferredMinor: sb.MDMinor,
			TotalDevices:   sb.NrDisks,
			ActiveDevices:  sb.ActiveDisks,
			WorkingDevices: sb.WorkingDisks,
			FailedDevices:  sb.FailedDisks,
			SpareDevices:   sb.SpareDisks,
			NotPersistent:  sb.NotPersistent != 0,
			StateFlags:     flagList(sb.State.String()),
			ThisDisk:       diskJSON(-1, sb.ThisDisk),
			Disks:          []jsonDisk{},
		}
		for i, d := range sb.Disks {
			if d != (superblock.Descriptor{}) {
				v.Disks = append(v.Disks, diskJSON(i, d))
			}
		}
		js.V090 = v
	} else {
		f := sb.Features
		state, consistent := sb.ArrayState()
		v := &jsonV1{
			FeatureMap:            uint32(f),
			Features:              nonNil(f.Names()),
			SetName:               sb.FullName(),
			DeviceUUID:            sb.DeviceUUID.String(),
			DevNumber:             sb.DevNumber,
			MaxDev:                sb.MaxDev(),
			DataOffsetSectors:     sb.DataOffset,
			AvailDevSizeSectors:   sb.DataSize,
			SuperOffsetSectors:    sb.SuperOffset,
			LogicalBlockSizeBytes: sb.LogicalBlockSize,
			ResyncOffsetSectors:   sb.ResyncOffset,
			DevFlags:              nonNil(strings.Fields(sb.DevFlags.String())),
			CntCorrectedRead:      sb.CntCorrectedRead,
			ArrayState:            state,
			ArrayStateConsistent:  consistent,
			DevRoles:              make([]string, 0, len(sb.DevRoles)),
		}
		for _, r := range sb.DevRoles {
			v.DevRoles = append(v.DevRoles, r.String())
		}
		for _, u := range rep.Unknown {
			v.UnknownFields = append(v.UnknownFields, jsonUnknown{Name: u.Name, OffsetBytes: u.Offset, Value: u.Value})
		}
		if f&superblock.FeatureNewOffset != 0 {
			n := sb.NewOffset
			v.NewOffsetSectors = &n
		}
		if f&superblock.FeatureRecoveryOffset != 0 {
			r := sb.RecoveryOffset
			v.RecoveryOffsetSectors = &r
		}
		before, after := sb.UnusedSpace(rep.Size, bitmapFor(rep))
		if after != 1 && f&superblock.FeatureNewOffset == 0 {
			v.UnusedSpace = &jsonUnused{BeforeSectors: before, AfterSectors: int64(after)}
		}
		if f&superblock.FeatureBitmapOffset != 0 {
			o := sb.BitmapOffset
			v.BitmapOffsetSectors = &o
		} else if sb.HasPPL() {
			v.PPL = &jsonPPLGeometry{OffsetSectors: sb.PPLOffset(), SizeSectors: sb.PPLSize()}
		}
		if sb.BBLogSize != 0 && sb.BBLogOffset != 0 {
			v.BadBlockLog = &jsonBBLog{
				OffsetSectors:    sb.BBLogOffset,
				SizeSectors:      sb.BBLogSize,
				Shift:            sb.BBLogShift,
				EntriesAvailable: int(sb.BBLogSize) * 512 / 8,
				BadBlocksPresent: f&superblock.FeatureBadBlocks != 0,
			}
		}
		js.V1 = v
	}
	j.Superblock = js
	if bm := rep.Bitmap; bm != nil {
		j.Bitmap = &jsonBitmap{
			Version: bm.Version, UUID: bm.UUID.String(), Events: bm.Events, EventsCleared: bm.EventsCleared,
			SyncSizeSectors: bm.SyncSize, ChunkBytes: uint64(bm.ChunkSize), DaemonSleepSecs: bm.DaemonSleep,
			WriteBehind: bm.WriteBehind, Nodes: bm.Nodes, State: flagList(bm.State.String()),
		}
		if bm.Version == superblock.BitmapMajorLockless {
			// Its chunk size is in sectors.
			j.Bitmap.ChunkBytes = uint64(bm.ChunkSize) * 512
		}
		if rep.LLBitmap != nil {
			j.Bitmap.Lockless = llBitmapJSON(bm, rep.LLBitmap)
		}
		j.Bitmap.LocklessError = errString(rep.LLBitmapErr)
	}
	for _, bb := range rep.BadBlocks {
		j.BadBlocks = append(j.BadBlocks, jsonBadBlock{Sector: bb.Sector, LengthSectors: bb.Length})
	}
	if h := rep.PPL; h != nil {
		j.PPL = &jsonPPL{Signature: h.Signature, Generation: h.Generation, EntriesCount: h.EntriesCount, Checksum: h.Checksum}
	}
	return j
}
