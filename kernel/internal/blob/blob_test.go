package blob

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	members := []Member{
		{"version", []byte("Linux version 6.12.95 (x)\n")},
		{"empty", nil},
		{"big", bytes.Repeat([]byte("ffffffff81000000 T _text\n"), 10000)},
	}
	b, err := Encode(members)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(members)
	if !bytes.Equal(b, b2) {
		t.Error("Encode is not deterministic")
	}
	a, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if !a.Has(m.Name) {
			t.Errorf("Has(%s) = false", m.Name)
		}
		got, err := a.Read(m.Name)
		if err != nil || !bytes.Equal(got, m.Data) {
			t.Errorf("Read(%s) = %d bytes, %v", m.Name, len(got), err)
		}
	}
	if _, err := a.Read("btf"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) error = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "garbage", magic + "name\n", magic + "name\n10\n5\nabc", magic + "name\nx\n1\n"} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}
