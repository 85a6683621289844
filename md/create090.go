package md

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/go-mdraid/mdraid/superblock"
)

// createSlot is one device of a create plan: its index in the request's
// devices, its descriptor number, its role and its slot.
type createSlot struct {
	dev    int // index into CreateFacts.Devices
	number uint32
	role   superblock.Role
	slot   int
}

// plan090 finishes a create plan with 0.90 metadata, as mdadm's
// init_super0, add_to_super0, write_init_super0 and add_internal_bitmap0
// write it (super0.c at d1447022; docs/create.md §9): every member's
// superblock in the last 64 KiB-aligned 64 KiB but one of the device,
// the data from sector 0; the descriptors of the devices present (a
// missing slot's stays zero; the spare that recovery fills has number
// and raid_disk n and no state bits); events 1; clean when no resync is
// to run; with a homehost, the UUID's last 8 bytes are the SHA-1 of it
// (mdadm's mark of a local 0.90 array). The bitmap is right after the
// superblock, 60 KiB written: its header, then every bit set.
func plan090(p *CreatePlan, req CreateRequest, f CreateFacts, slots []createSlot, n, spares, missing int, clean, bitmap bool,
	bmSync uint64, bmChunk uint32, sizeKiB uint64, check func(name, format string, args ...any)) (*CreatePlan, error) {
	a := req.Array
	lv := req.Level
	if n+spares > maxDisks090 {
		return nil, refuseCreate(a, CheckRaidDevices, "%d devices: 0.90 metadata holds at most %d", n+spares, maxDisks090)
	}
	if sizeKiB > math.MaxUint32 || (lv != superblock.LevelRAID0 && p.UsedSectors >= max090Sectors) {
		return nil, refuseCreate(a, CheckSize, "%d KiB per device: 0.90 metadata records at most 4 TiB per device", sizeKiB)
	}
	if req.Name != "" {
		check("name", "0.90 metadata records no name: %q names only the device link", req.Name)
	}
	if lv == superblock.LevelRAID0 {
		// 0.90 has no raid0 layout field: mdadm (write_init_super0)
		// writes layout 0 and takes only devices of one chunk count,
		// where every layout is the same.
		if req.Layout != "" {
			return nil, refuseCreate(a, CheckLayout, "0.90 metadata records no raid0 layout (--layout=%s)", req.Layout)
		}
		var chunks uint64
		for _, s := range slots {
			d := &f.Devices[s.dev]
			ds := uint64(d.SizeBytes) / 512
			c := (ds&^(reserved090-1) - reserved090) / (p.ChunkKiB * 2)
			if chunks != 0 && c != chunks {
				return nil, refuseCreate(a, CheckSize, "raid0 with 0.90 metadata needs devices of one size (in %d KiB chunks): %s holds %d, another %d", p.ChunkKiB, d.Path, c, chunks)
			}
			chunks = c
		}
		p.Layout = 0
	}
	set := f.ArrayUUID
	if req.Homehost != "" {
		h := sha1.Sum([]byte(req.Homehost))
		// set_uuid2 and set_uuid3 hold the hash's first 8 bytes as
		// they are in memory; SetUUID keeps each word most significant
		// byte first.
		for w := 0; w < 2; w++ {
			for i := 0; i < 4; i++ {
				set[8+4*w+i] = h[4*w+3-i]
			}
		}
	}
	var disks [superblock.Disks090]superblock.Descriptor
	active, working := 0, 0
	for _, s := range slots {
		d := &f.Devices[s.dev]
		desc := superblock.Descriptor{Number: s.number, Major: d.DevNum.Major, Minor: d.DevNum.Minor, RaidDisk: uint32(s.slot)}
		if s.role == superblock.RoleSpare {
			desc.RaidDisk = uint32(n)
		} else {
			desc.State = superblock.DiskActive | superblock.DiskSync
			active++
		}
		working++
		disks[s.number] = desc
	}
	var state superblock.ArrayFlags
	if clean {
		state |= superblock.ArrayClean
	}
	if bitmap {
		state |= superblock.ArrayBitmapPresent
	}
	failed := missing + spares
	ctime := uint64(uint32(f.Now.Unix()))
	var raid0Sectors uint64
	for _, s := range slots {
		d := &f.Devices[s.dev]
		ds := uint64(d.SizeBytes) / 512
		sbOff := ds&^(reserved090-1) - reserved090
		sb := &superblock.Superblock{
			Version:      superblock.Version090,
			ByteOrder:    binary.LittleEndian,
			MinorVersion: 90,
			SetUUID:      set,
			CTime:        ctime,
			UTime:        ctime,
			Level:        lv,
			Layout:       p.Layout,
			Size:         p.UsedSectors,
			ChunkSize:    p.ChunkKiB * 1024,
			RaidDisks:    uint32(n),
			NrDisks:      uint32(working + failed),
			MDMinor:      f.MDMinor,
			State:        state,
			ActiveDisks:  uint32(active),
			WorkingDisks: uint32(working),
			FailedDisks:  uint32(failed),
			SpareDisks:   uint32(spares),
			Events:       1,
			Disks:        disks,
			ThisDisk:     disks[s.number],
		}
		if p.UsedSectors > sbOff {
			return nil, refuseCreate(a, CheckSize, "%s is too small: %d sectors for data, %d needed", d.Path, sbOff, p.UsedSectors)
		}
		if lv == superblock.LevelRAID0 {
			raid0Sectors += sbOff &^ (p.ChunkKiB*2 - 1)
		}
		enc, err := sb.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("md: create %s: encoding the superblock of %s: %w", a, d.Path, err)
		}
		sbByte := int64(sbOff) * 512
		m := CreateMember{Path: d.Path, Slot: s.slot, Superblock: sb}
		m.Writes = append(m.Writes, CreateWrite{What: "superblock", Offset: sbByte, Data: enc})
		if bitmap {
			bm := &superblock.Bitmap{
				Version:     superblock.BitmapMajorHi,
				UUID:        sb.BitmapUUID(),
				SyncSize:    bmSync,
				ChunkSize:   bmChunk,
				DaemonSleep: bitmapDelay,
			}
			hdr, err := bm.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("md: create %s: encoding the bitmap of %s: %w", a, d.Path, err)
			}
			benc := bytes.Repeat([]byte{0xff}, 60<<10)
			copy(benc, hdr)
			m.Bitmap = bm
			m.Clear = append(m.Clear, [2]int64{sbByte + 4096, int64(len(benc))})
			m.Writes = append(m.Writes, CreateWrite{What: "bitmap", Offset: sbByte + 4096, Data: benc})
		}
		p.Members = append(p.Members, m)
	}
	p.ArraySectors = arraySectors(lv, p.Layout, n, p.UsedSectors, p.ChunkKiB, raid0Sectors)
	check("array-size", "%d sectors", p.ArraySectors)
	return p, nil
}
