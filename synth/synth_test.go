package synth

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Cases checked against 6.1.192 and 6.12.95 (testdata/conformance/synth.jsonl
// holds them and more, with the kernels' goldens).
func TestParseSyntheticEvents(t *testing.T) {
	for _, tc := range []struct {
		line     string
		readback string
		code     grammar.SynthCode
		pos      int
	}{
		{line: "lat u64 delta; char comm[16]; char path[]", readback: "lat\tu64 delta; char[16] comm; char[] path"},
		{line: "lat u64 a u32 b", readback: "lat\tu64 a; u32 b"},
		{line: "lat unsigned int x", readback: "lat\tunsigned int x"},
		{line: "lat char s[0]", readback: "lat\tchar[0] s"},
		{line: "lat long[8] st", readback: "lat\tlong[8] st"},
		{line: "lat char s[257]", code: grammar.SynthInvalidArraySpec, pos: 9},
		{line: "lat char[257] s", code: grammar.SynthInvalidType, pos: 4},
		{line: "lat u32 x[4]", code: grammar.SynthInvalidType, pos: 4},
		{line: "lat u64", code: grammar.SynthInvalidCmd},
		{line: "la-t u64 a", code: grammar.SynthBadName},
		{line: "lat u64 1a", code: grammar.SynthBadName, pos: 8},
		{line: "lat unsigned a", code: grammar.SynthIncompleteType, pos: 4},
		{line: "lat unsigned short a", code: grammar.SynthInvalidType, pos: 13},
		{line: "lat u64 a; u32", code: grammar.SynthInvalidField, pos: 11},
		{line: "lat u64 foo2; lat y", code: grammar.SynthInvalidType, pos: 0},
		{line: "lat " + strings.Repeat("u64 f; ", 65), code: grammar.SynthTooManyFields},
	} {
		cmd, ok, err := ParseSyntheticEvents(tc.line, nil)
		switch {
		case tc.code != grammar.SynthNone:
			if err == nil || err.Code != tc.code || err.Pos != tc.pos {
				t.Errorf("%q: %v, want %s at %d", tc.line, err, tc.code, tc.pos)
			}
		case err != nil || !ok:
			t.Errorf("%q: %v", tc.line, err)
		case cmd.Event.Readback() != tc.readback:
			t.Errorf("%q: readback %q, want %q", tc.line, cmd.Event.Readback(), tc.readback)
		}
	}
}

func TestEventExists(t *testing.T) {
	exists := func(n string) bool { return n == "lat" }
	if _, _, err := ParseSyntheticEvents("lat u64 a", exists); err == nil || err.Code != grammar.SynthEventExists || err.Errno.Error() != "file exists" {
		t.Errorf("existing name: %v", err)
	}
	if _, _, err := ParseDynamic("s:synthetic/lat u64 a", exists); err == nil || err.Code != grammar.SynthEventExists || err.Pos != 12 {
		t.Errorf("existing name in dynamic_events: %v", err)
	}
}

func TestFormat(t *testing.T) {
	cmd, _, err := ParseSyntheticEvents("lat u64 delta; char comm[16]; char path[]", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	cmd.Event.FormatFields(&b)
	want := "\tfield:u64 delta;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:char comm[];\toffset:16;\tsize:16;\tsigned:1;\n" +
		"\tfield:__data_loc char[] path;\toffset:272;\tsize:8;\tsigned:1;\n"
	if b.String() != want {
		t.Errorf("fields:\n%s\nwant:\n%s", b.String(), want)
	}
	if got, want := cmd.Event.PrintFmt(), `"delta=%llu, comm=%s, path=%s", REC->delta, REC->comm, __get_str(path)`; got != want {
		t.Errorf("print fmt %s, want %s", got, want)
	}
}

// FuzzParse: no input panics, and an accepted definition reads back as a
// definition the parser accepts again, unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"lat u64 delta; char comm[16]; char path[]", "s:synthetic/x unsigned long[] st", "!lat", "a u64 b u32 c", "x char s[0x1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmd, ok, err := ParseSyntheticEvents(line, nil)
		if _, _, derr := ParseDynamic(line, nil); derr != nil && derr.Errno == 0 {
			t.Fatalf("%q: error without errno", line)
		}
		if err != nil || !ok || cmd.Delete {
			return
		}
		rb := cmd.Event.Readback()
		again, _, err := ParseSyntheticEvents(rb, nil)
		if err != nil || again.Event.Readback() != rb {
			t.Fatalf("%q reads back %q, which parses to %v, %v", line, rb, again.Event, err)
		}
	})
}
