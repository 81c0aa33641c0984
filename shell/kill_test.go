package shell

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"mvdan.cc/sh/v3/interp"
)

// TestKill: kill's options and messages are busybox's; signal 0 to this
// process succeeds, a PID that does not exist and a background job's
// "gN" name fail with status 1, each said on stderr.
func TestKill(t *testing.T) {
	self := fmt.Sprint(os.Getpid())
	tests := []struct {
		args         []string
		status       uint8
		stdout, errs string
	}{
		{args: []string{"-0", self}},
		{args: []string{"-s", "0", self}},
		{args: []string{"-n", "0", "--", self}},
		{args: []string{"-0", "999999999"}, status: 1, errs: "kill: can't kill pid 999999999: No such process\n"},
		{args: []string{"-XYZ", self}, status: 1, errs: "kill: bad signal name 'XYZ'\n"},
		{args: []string{"-s"}, status: 1, errs: "kill: option requires an argument -- s\n"},
		{args: []string{"g1"}, status: 1, errs: "kill: can't kill g1: a background job of ktrace sh has no process ID\n"},
		{args: []string{"-l", "9"}, stdout: "KILL\n"},
		{args: []string{"-l", "15", "2"}, stdout: "TERM\nINT\n"},
	}
	for _, tt := range tests {
		var out, errs bytes.Buffer
		err := shKill(&out, &errs, tt.args)
		status := uint8(0)
		if st, ok := interp.IsExitStatus(err); ok {
			status = st
		} else if err != nil {
			t.Fatalf("kill %q: %v", tt.args, err)
		}
		if status != tt.status || out.String() != tt.stdout || errs.String() != tt.errs {
			t.Errorf("kill %q: status %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, status, out.String(), errs.String(), tt.status, tt.stdout, tt.errs)
		}
	}
}
