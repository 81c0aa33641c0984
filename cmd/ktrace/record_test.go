package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/tracer"
)

// TestRecordUnavailable checks that record exits 3 and names the missing
// capability or kernel feature when this machine cannot trace (as on a
// kernel built without kprobes), before touching the kernel. Where
// tracing works the case does not apply; the VM tests cover it.
func TestRecordUnavailable(t *testing.T) {
	why := tracer.Check()
	if why == nil {
		t.Skip("this machine can trace; record's failure path does not apply")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--kernel", "host", "record", "p:myev do_sys_openat2 path=+0($arg2):string", "--", "true"}, strings.NewReader(""), &out, &errb)
	if code != exitNoAccess {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitNoAccess, errb.String())
	}
	want := "ktrace: record: " + why.Error() + "\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	for _, s := range []string{"CAP_", "kprobes", "BPF"} {
		if strings.Contains(errb.String(), s) {
			return
		}
	}
	t.Errorf("stderr %q names no capability or feature", errb.String())
}
