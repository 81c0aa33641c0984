package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deadPid returns a pid that is not running.
func deadPid(t *testing.T) int {
	for p := 4194000; p > 300000; p-- {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); os.IsNotExist(err) {
			return p
		}
	}
	t.Skip("no free pid found")
	return 0
}

// TestCleanStale runs CleanStale on a plain file standing in for
// kprobe_events: only entries of ktrace groups whose process is gone are
// removed (a "-:GROUP/EVENT" line appended).
func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	dead := deadPid(t)
	live := os.Getpid()
	content := fmt.Sprintf("r8:ktrace_%d_0123abcd/vfs_read vfs_read\n"+
		"r8:ktrace_%d_4567ef01/vfs_write vfs_write\n"+
		"p:kprobes/myev do_sys_openat2\n"+
		"r8:ebpf_%d_89ab/vfs_read vfs_read\n"+
		"p:ktrace_x_1/ev vfs_read\n", dead, live, dead)
	path := filepath.Join(dir, "kprobe_events")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err := CleanStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ktrace_%d_0123abcd/vfs_read", dead)
	if len(removed) != 1 || removed[0] != want {
		t.Errorf("removed %v, want [%s]", removed, want)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), "-:"+want+"\n") {
		t.Errorf("kprobe_events ends %q", string(b)[len(content):])
	}
}
