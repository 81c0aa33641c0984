package fetchargs

import "github.com/ktrace-dev/ktrace/grammar"

// Type is a fetch type of the kernel's probe_fetch_types table: how a
// fetched value is stored in the record and printed.
type Type struct {
	Name     string // type name as written after ':' (u8, x64, string, ...)
	Size     int    // bytes in the record's fixed part (4 for __data_loc strings)
	IsSigned bool
	IsString bool   // string, ustring, symstr: stored out of line via __data_loc
	Fmt      string // printf format used in "print fmt"
	FmtType  string // C type name shown in the format file
}

// The kernel's fetch type table. "char" only exists on kernels whose
// dialect has it (see rules.charType).
var fetchTypes = []*Type{
	{Name: "string", Size: 4, IsSigned: true, IsString: true, Fmt: `\"%s\"`, FmtType: "__data_loc char[]"},
	{Name: "ustring", Size: 4, IsSigned: true, IsString: true, Fmt: `\"%s\"`, FmtType: "__data_loc char[]"},
	{Name: "symstr", Size: 4, IsSigned: true, IsString: true, Fmt: `\"%s\"`, FmtType: "__data_loc char[]"},
	{Name: "u8", Size: 1, Fmt: "%u", FmtType: "u8"},
	{Name: "u16", Size: 2, Fmt: "%u", FmtType: "u16"},
	{Name: "u32", Size: 4, Fmt: "%u", FmtType: "u32"},
	{Name: "u64", Size: 8, Fmt: "%Lu", FmtType: "u64"},
	{Name: "s8", Size: 1, IsSigned: true, Fmt: "%d", FmtType: "s8"},
	{Name: "s16", Size: 2, IsSigned: true, Fmt: "%d", FmtType: "s16"},
	{Name: "s32", Size: 4, IsSigned: true, Fmt: "%d", FmtType: "s32"},
	{Name: "s64", Size: 8, IsSigned: true, Fmt: "%Ld", FmtType: "s64"},
	{Name: "x8", Size: 1, Fmt: "0x%x", FmtType: "u8"},
	{Name: "x16", Size: 2, Fmt: "0x%x", FmtType: "u16"},
	{Name: "x32", Size: 4, Fmt: "0x%x", FmtType: "u32"},
	{Name: "x64", Size: 8, Fmt: "0x%Lx", FmtType: "u64"},
	{Name: "char", Size: 1, Fmt: "'%c'", FmtType: "u8"},
	{Name: "symbol", Size: 8, Fmt: "%pS", FmtType: "u64"},
}

// defaultType is the type of an argument without ":TYPE" and without BTF
// information: unsigned long shown in hex (64-bit kernels only).
const defaultType = "x64"

// LookupType returns the fetch type named name as the newest kernel knows
// it, or nil. Bitfield types ("b<W>@<O>/<C>") resolve to their container.
func LookupType(name string) *Type {
	t, err := grammar.ParseType(name)
	if err != nil {
		return nil
	}
	return findTypeOf(t, name, false, rules{charType: true})
}

// findType is the kernel's find_fetch_type for a type name ("" means the
// default type); bitfields are findTypeOf's.
func findType(name string, r rules) *Type {
	if name == "" {
		name = defaultType
	}
	if name == "char" && !r.charType {
		return nil
	}
	for _, t := range fetchTypes {
		if t.Name == name {
			return t
		}
	}
	return nil
}
