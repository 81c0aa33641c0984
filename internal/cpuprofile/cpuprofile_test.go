package cpuprofile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartUnset(t *testing.T) {
	var warn bytes.Buffer
	Start("", &warn)()
	if warn.Len() != 0 {
		t.Errorf("warned %q for no profile", warn.String())
	}
}

func TestStartWritesProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	var warn bytes.Buffer
	stop := Start(path, &warn)
	stop()
	if warn.Len() != 0 {
		t.Fatalf("warned %q", warn.String())
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		t.Errorf("%s is empty after the profile stopped", path)
	}
}

func TestStartBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof")
	var warn bytes.Buffer
	Start(path, &warn)()
	if got := warn.String(); !strings.HasPrefix(got, "ktrace: KTRACE_CPUPROFILE: ") || !strings.Contains(got, "no such file") {
		t.Errorf("warning %q, want the KTRACE_CPUPROFILE failure", got)
	}
}
