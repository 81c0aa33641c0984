package record

import (
	"bytes"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		dash       int
		follow     bool
		pid        int
		lines, cmd []string
		err        string
	}{
		{[]string{"p:a vfs_read"}, -1, false, 0, []string{"p:a vfs_read"}, nil, ""},
		{[]string{"p:a vfs_read", "true", "x"}, 1, true, 0, []string{"p:a vfs_read"}, []string{"true", "x"}, ""},
		{[]string{"p:a vfs_read"}, 1, false, 0, nil, nil, "no command after --"},
		{[]string{"p:a vfs_read"}, -1, true, 0, nil, nil, "--follow needs a command after --"},
		{[]string{"true"}, 0, true, 7, nil, nil, "--pid and --follow exclude each other"},
	} {
		lines, cmd, err := SplitCommand(tc.args, tc.dash, tc.follow, tc.pid)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("SplitCommand(%q, %d) err = %v, want %q", tc.args, tc.dash, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(lines, tc.lines) || !reflect.DeepEqual(cmd, tc.cmd) {
			t.Errorf("SplitCommand(%q, %d) = %q, %q, %v; want %q, %q", tc.args, tc.dash, lines, cmd, err, tc.lines, tc.cmd)
		}
	}
}

func TestDefineErrorWriteLog(t *testing.T) {
	de := &DefineError{Line: "p:x nosuch", Err: &events.WriteError{Errno: syscall.ENOENT, Logs: []events.LogEntry{
		{Subsys: "trace_kprobe", Msg: "Failed to register probe event", Cmd: "p:x nosuch", Pos: 4},
	}}}
	var w bytes.Buffer
	de.WriteLog(&w)
	if want := "ktrace: trace_kprobe: error: Failed to register probe event\n  Command: p:x nosuch\n"; w.String() != want {
		t.Errorf("WriteLog wrote %q, want %q", w.String(), want)
	}
	w.Reset()
	(&DefineError{Line: "x", Err: syscall.EINVAL}).WriteLog(&w)
	if w.Len() != 0 {
		t.Errorf("WriteLog without error_log entries wrote %q", w.String())
	}
}

func TestSummaryCommandExit(t *testing.T) {
	err := exec.Command("sh", "-c", "exit 3").Run()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Skipf("sh -c 'exit 3': %v", err)
	}
	s := &Summary{Probes: 1, Attach: time.Millisecond, StatsErr: errors.New("no counters"), Command: "sh", CommandErr: err}
	var w bytes.Buffer
	s.WriteText(&w)
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != 3 || lines[1] != "ktrace: no counters" || lines[2] != "ktrace: sh: exit status 3" {
		t.Errorf("summary %q, want the attach line, the counters error and the command's exit", w.String())
	}
	w.Reset()
	s.CommandErr = nil
	s.WriteText(&w)
	if strings.Contains(w.String(), "sh:") {
		t.Errorf("summary %q names a command that exited 0", w.String())
	}
}
