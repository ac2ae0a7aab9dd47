// Package protowire appends the protocol buffer wire format: the few
// functions of google.golang.org/protobuf/encoding/protowire the OTLP
// exporter uses, with the same names and results. The exporter writes its
// messages by hand; linking protobuf's package for this would run its
// dependencies' initialisation at every cold start of every function
// (internal/detrand opens the executable and reads eight samples of it),
// for nothing the exporter uses.
package protowire

import "encoding/binary"

// Number is a field number.
type Number int32

// Type is a wire type.
type Type int8

// The wire types the exporter writes.
const (
	VarintType  Type = 0
	Fixed64Type Type = 1
	BytesType   Type = 2
	Fixed32Type Type = 5
)

// AppendTag appends the key of field num with wire type typ.
func AppendTag(b []byte, num Number, typ Type) []byte {
	return AppendVarint(b, uint64(num)<<3|uint64(typ&7))
}

// AppendVarint appends v in base 128, least significant group first.
func AppendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendFixed32 appends v, little-endian.
func AppendFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendFixed64 appends v, little-endian.
func AppendFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// AppendBytes appends v with its length before it.
func AppendBytes(b []byte, v []byte) []byte { return append(AppendVarint(b, uint64(len(v))), v...) }

// AppendString appends v with its length before it.
func AppendString(b []byte, v string) []byte { return append(AppendVarint(b, uint64(len(v))), v...) }

// EncodeBool is x as a varint's value.
func EncodeBool(x bool) uint64 {
	if x {
		return 1
	}
	return 0
}
