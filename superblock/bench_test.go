package superblock

import (
	"bytes"
	"testing"
)

// benchSB is a 1.2 superblock with max_dev 128, like mdadm creates.
func benchSB() *Superblock {
	sb := testSB1(Version12)
	sb.DevRoles = make([]Role, 128)
	for i := range sb.DevRoles {
		sb.DevRoles[i] = RoleSpare
	}
	sb.DevRoles[0], sb.DevRoles[1], sb.DevRoles[2] = 0, 1, 2
	return sb
}

func BenchmarkDecode(b *testing.B) {
	buf := make([]byte, BlockSize)
	enc, err := benchSB().MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	copy(buf, enc)
	var sb Superblock
	if err := sb.UnmarshalBinary(buf); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(Size1 + 2*128))
	for b.Loop() {
		if err := sb.UnmarshalBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	sb := benchSB()
	buf := make([]byte, 0, BlockSize)
	b.ReportAllocs()
	b.SetBytes(int64(sb.EncodedSize()))
	for b.Loop() {
		var err error
		if buf, err = sb.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProbe(b *testing.B) {
	const size = 64 << 20
	dev := make([]byte, size)
	enc, err := benchSB().MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	copy(dev[4096:], enc)
	r := bytes.NewReader(dev)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Probe(r, size)
		if err != nil || res.Chosen != 0 {
			b.Fatal(res, err)
		}
	}
}
