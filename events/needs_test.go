package events

import (
	"bytes"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestWriteNeeds(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	var w bytes.Buffer
	n := WriteNeeds(&w, m, "f:q vfs_read")
	if len(n) == 0 {
		t.Fatal("an fprobe line needs nothing on 6.1")
	}
	if want := `ktrace: "f:q vfs_read" needs ` + n[0]; !bytes.HasPrefix(w.Bytes(), []byte(want)) || !bytes.HasSuffix(w.Bytes(), []byte("\n")) {
		t.Errorf("note %q, want %q...", w.String(), want)
	}
	w.Reset()
	if n := WriteNeeds(&w, m, "p:a vfs_read"); n != nil || w.Len() != 0 {
		t.Errorf("p line: needs %q, note %q; want none", n, w.String())
	}
}
