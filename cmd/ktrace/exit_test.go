package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCodes checks the documented exit codes: 0 ok, 1 rejected line or
// failed operation, 2 usage error; `ktrace sh` exits with the script's
// status.
func TestExitCodes(t *testing.T) {
	session := filepath.Join(t.TempDir(), "session")
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"accepted", []string{"check", "p:myev do_sys_openat2 $arg1"}, 0},
		{"rejected", []string{"check", "p:x nosuchsym"}, 1},
		{"one of several rejected", []string{"check", "p:a vfs_read", "p:b vfs_read %zz"}, 1},
		{"unknown letter", []string{"check", "x:foo vfs_read"}, 1},
		{"no lines", []string{"check"}, 2},
		{"unknown verb", []string{"frobnicate"}, 2},
		{"unknown flag", []string{"check", "--frob", "p:a vfs_read"}, 2},
		{"bad output", []string{"--output", "xml", "check", "p:a vfs_read"}, 2},
		{"bad syntax flag", []string{"--syntax", "old", "check", "p:a vfs_read"}, 2},
		{"ls takes no args", []string{"--session", session, "ls", "x"}, 2},
		{"add nothing", []string{"--session", session, "add"}, 2},
		{"add rejected", []string{"--session", session, "add", "p:x nosuchsym"}, 1},
		{"rm missing", []string{"--session", session, "rm", "kprobes/none"}, 1},
		{"format missing", []string{"--session", session, "format", "kprobes/none"}, 1},
		{"sh status", []string{"sh", "-c", "exit 7"}, 7},
		{"sh rejected write", []string{"sh", "-c", "echo 'p:x nosuchsym' >> kprobe_events"}, 1},
		{"sh ok", []string{"sh", "-c", "echo 'p:a vfs_read' >> kprobe_events"}, 0},
		{"sh syntax error", []string{"sh", "-c", "if then"}, 2},
		{"missing snapshot dir", []string{"--kernel", filepath.Join(t.TempDir(), "none"), "check", "p:a vfs_read"}, 1},
		{"capture needs a dir", []string{"kernel", "capture"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KTRACE_KERNEL", "embedded")
			var out, errb bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Errorf("ktrace %q exited %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.code, out.String(), errb.String())
			}
		})
	}
}
