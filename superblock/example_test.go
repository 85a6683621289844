package superblock_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/superblock"
)

// newMember builds the superblock of the second member of a three-disk
// raid5 with 1.2 metadata, as mdadm would write it.
func newMember() *superblock.Superblock {
	sb := &superblock.Superblock{
		Version:      superblock.Version12,
		SetUUID:      uuid.MustParse("6a1c2f9e-0b7d-4c36-9d0e-51f2a3b4c5d6"),
		CTime:        superblock.PackTime(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)),
		UTime:        superblock.PackTime(time.Date(2024, 3, 2, 8, 30, 0, 0, time.UTC)),
		Level:        superblock.LevelRAID5,
		Layout:       2,
		Size:         2048,
		ChunkSize:    512 << 10,
		RaidDisks:    3,
		DataOffset:   4096,
		DataSize:     2048,
		SuperOffset:  8,
		DevNumber:    1,
		Events:       42,
		ResyncOffset: ^uint64(0),
		DevRoles:     []superblock.Role{0, 1, superblock.RoleFaulty, 2},
	}
	if err := sb.SetFullName("myhost:data"); err != nil {
		panic(err)
	}
	return sb
}

// Build a superblock value, encode it and decode it back.
func Example() {
	b, err := newMember().MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	sb, err := superblock.Decode(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	state, _ := sb.ArrayState()
	fmt.Println(len(b), sb.Version, sb.Name(), sb.Level, sb.LayoutName())
	fmt.Println(sb.Created().Format(time.RFC3339), sb.StateText())
	fmt.Println(sb.RoleText(), state)
	fmt.Printf("%#x\n", sb.Checksum)
	// Output:
	// 512 1.2 data raid5 left-symmetric
	// 2024-03-01T12:00:00Z clean
	// Active device 1 AAA
	// 0xe68ad8fe
}

// A damaged superblock still decodes: the error carries the value.
func ExampleChecksumError() {
	b, _ := newMember().MarshalBinary()
	b[40] ^= 0xff // corrupt the name
	sb, err := superblock.Decode(b)
	var ce *superblock.ChecksumError
	if errors.As(err, &ce) {
		fmt.Printf("checksum %#x - expected %#x\n", ce.Stored, ce.Computed)
		fmt.Println(sb == ce.Superblock, sb.Events)
	}
	fmt.Println(errors.Is(err, superblock.ErrChecksum))
	// Output:
	// checksum 0xe68ad8fe - expected 0xe68ad93b
	// true 42
	// true
}

// Probe finds the superblock on a device image and what mdadm would pick.
func ExampleProbe() {
	dev := make([]byte, 4<<20)
	b, _ := newMember().MarshalBinary()
	copy(dev[4096:], b)

	res, err := superblock.Probe(bytes.NewReader(dev), int64(len(dev)))
	if err != nil {
		fmt.Println(err)
		return
	}
	best := res.Best()
	fmt.Println(len(res.Candidates), best.Version, best.Offset, best.Superblock.Validate(int64(len(dev))))
	// Output:
	// 1 1.2 4096 <nil>
}

func ExampleVersion_Offset() {
	for _, v := range superblock.Versions {
		off, err := v.Offset(10 << 20)
		fmt.Println(v, off, err)
	}
	_, err := superblock.Version090.Offset(1000)
	fmt.Println(errors.Is(err, superblock.ErrDeviceTooSmall))
	// Output:
	// 0.90 10420224 <nil>
	// 1.0 10477568 <nil>
	// 1.1 0 <nil>
	// 1.2 4096 <nil>
	// true
}
