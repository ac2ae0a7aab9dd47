package protowire_test

import (
	"bytes"
	"math"
	"testing"

	official "google.golang.org/protobuf/encoding/protowire"

	"github.com/countersign/countersign/shared/telemetry/otlp/internal/protowire"
)

// TestSameAsProtobuf: each function appends what protobuf's own does, at
// every varint length and the edges of each type.
func TestSameAsProtobuf(t *testing.T) {
	var uints []uint64
	for shift := range 64 {
		v := uint64(1) << shift
		uints = append(uints, v-1, v, v+1)
	}
	uints = append(uints, math.MaxUint64, math.MaxUint32)
	prefix := []byte{0xaa}
	check := func(name string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %x, want %x", name, got, want)
		}
	}
	for _, v := range uints {
		check("AppendVarint", protowire.AppendVarint(prefix, v), official.AppendVarint(prefix, v))
		check("AppendFixed64", protowire.AppendFixed64(prefix, v), official.AppendFixed64(prefix, v))
		check("AppendFixed32", protowire.AppendFixed32(prefix, uint32(v)), official.AppendFixed32(prefix, uint32(v)))
	}
	for _, num := range []int32{1, 15, 16, 2047, 2048, 1<<29 - 1} {
		for _, typ := range []protowire.Type{protowire.VarintType, protowire.Fixed64Type, protowire.BytesType, protowire.Fixed32Type} {
			check("AppendTag", protowire.AppendTag(prefix, protowire.Number(num), typ), official.AppendTag(prefix, official.Number(num), official.Type(typ)))
		}
	}
	for _, n := range []int{0, 1, 127, 128, 300, 20000} {
		s := bytes.Repeat([]byte{'x'}, n)
		check("AppendBytes", protowire.AppendBytes(prefix, s), official.AppendBytes(prefix, s))
		check("AppendString", protowire.AppendString(prefix, string(s)), official.AppendString(prefix, string(s)))
	}
	if protowire.EncodeBool(true) != official.EncodeBool(true) || protowire.EncodeBool(false) != official.EncodeBool(false) {
		t.Error("EncodeBool differs")
	}
}
