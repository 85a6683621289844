package superblock

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// naiveCsum1 is the 1.x checksum written the obvious way, with the csum
// field zeroed in a copy.
func naiveCsum1(b []byte) uint32 {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[off1SBCsum:], 0)
	var sum uint64
	i := 0
	for ; i+4 <= len(c); i += 4 {
		sum += uint64(binary.LittleEndian.Uint32(c[i:]))
	}
	if len(c)-i == 2 {
		sum += uint64(binary.LittleEndian.Uint16(c[i:]))
	}
	return uint32(sum&0xffffffff) + uint32(sum>>32)
}

// FuzzChecksum1 checks the unrolled checksum and role decoding against
// straightforward versions.
func FuzzChecksum1(f *testing.F) {
	f.Add(make([]byte, Size1+2*3))
	f.Add(make([]byte, Size1+2*128))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < Size1 || len(b) > Size1+2*MaxDev1 || len(b)%2 != 0 {
			return
		}
		if got, want := csum1(b), naiveCsum1(b); got != want {
			t.Fatalf("csum1 = %#x, want %#x", got, want)
		}
		n := (len(b) - Size1) / 2
		roles := make([]Role, n)
		decodeRoles(roles, b[Size1:])
		for i := range roles {
			if want := Role(binary.LittleEndian.Uint16(b[Size1+2*i:])); roles[i] != want {
				t.Fatalf("role %d = %#x, want %#x", i, roles[i], want)
			}
		}
	})
}

// FuzzBadBlocks checks that decoded bad-block entries encode back to
// entries that decode equal.
func FuzzBadBlocks(f *testing.F) {
	f.Add([]byte{0x08, 0x40, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, shift uint8) {
		if len(b) > 8*512 || shift > 63 {
			return
		}
		bbs := DecodeBadBlocks(b, shift)
		var keep []BadBlock
		for _, bb := range bbs {
			if bb.Length != 0 && bb.Sector>>shift<<shift == bb.Sector && (bb.Sector>>shift)>>54 == 0 {
				keep = append(keep, bb)
			}
		}
		enc, err := AppendBadBlocks(nil, keep, shift, 8*(len(keep)+1))
		if err != nil {
			return // shifted values lost bits: not representable
		}
		if got := DecodeBadBlocks(enc, shift); !reflect.DeepEqual(got, keep) {
			t.Fatalf("round trip: %v, want %v", got, keep)
		}
	})
}
