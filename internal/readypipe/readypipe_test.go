package readypipe

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestReportWait(t *testing.T) {
	// Raw descriptors: Report owns and closes the write end, as a started
	// copy owns the one it inherited.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(fds[0]), "ready-r")
	defer r.Close()
	if !Report(uintptr(fds[1])) {
		t.Fatal("Report on an open pipe failed")
	}
	if err := Wait(r); err != nil {
		t.Errorf("Wait after Report: %v", err)
	}
}

func TestWaitNotReady(t *testing.T) {
	for _, tc := range []struct{ wrote, want string }{
		{"", `"", EOF`},
		{"busy\n", `"busy\n", <nil>`},
		{"ready", `"ready", EOF`},
	} {
		if err := Wait(strings.NewReader(tc.wrote)); err == nil || err.Error() != tc.want {
			t.Errorf("Wait after %q: %v, want %s", tc.wrote, err, tc.want)
		}
	}
}
