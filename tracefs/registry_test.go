package tracefs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// newRegistryFS is a tracefs over the real event registry and the embedded
// 6.12.95 model.
func newRegistryFS(t *testing.T) *FS {
	t.Helper()
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatalf("embedded model: %v", err)
	}
	major, minor, _ := m.KernelVersion()
	d := grammar.DialectFor(major, minor)
	return New(NewRegistryBackend(events.NewRegistry(m, d)), Options{Major: d.Major, Minor: d.Minor, CPUs: m.CPUs()})
}

// Transcript of 6.12.95 (tools/vmsh), timestamps removed.
func TestRegistryBackendTranscript(t *testing.T) {
	fsys := newRegistryFS(t)
	steps := []struct {
		file, data string
		errno      syscall.Errno
	}{
		{"kprobe_events", "p:k1 vfs_read a=%di:u32 s=+0(%si):string", 0},
		{"kprobe_events", "r:k1 vfs_write", syscall.EEXIST},
		{"kprobe_events", "p:y vfs_read %zz", syscall.EINVAL},
		{"kprobe_events", "x:foo vfs_read", syscall.EINVAL},
		{"events/kprobes/k1/filter", "bogus == 1", syscall.EINVAL},
		{"kprobe_events", "r:k2 vfs_read", 0},
		{"events/kprobes/k2/filter", "__probe_func == 0", 0},
	}
	for _, s := range steps {
		err := writeFile(fsys, s.file, s.data, !strings.HasSuffix(s.file, "_events"))
		if s.errno == 0 && err != nil || s.errno != 0 && !errors.Is(err, s.errno) {
			t.Errorf("echo %q > %s: %v, want %v", s.data, s.file, err, s.errno)
		}
	}
	want := "trace_kprobe: error: Probe type is different from existing probe\n" +
		"  Command: r:k1 vfs_write\n" +
		"           ^\n" +
		"trace_kprobe: error: Invalid register name\n" +
		"  Command: p:y vfs_read %zz\n" +
		"                        ^\n" +
		"event filter parse error: error: Field not found\n" +
		"  Command: bogus == 1\n" +
		"                 ^\n"
	var got strings.Builder
	for _, e := range fsys.ErrorLog() {
		got.WriteString(FormatLogEntry(e))
	}
	if got.String() != want {
		t.Errorf("error_log =\n%s\nwant\n%s", got.String(), want)
	}
	if s := readString(t, fsys, "kprobe_events"); s != "p:kprobes/k1 vfs_read a=%di:u32 s=+0(%si):string\nr10:kprobes/k2 vfs_read\n" {
		t.Errorf("kprobe_events = %q", s)
	}
	if s := readString(t, fsys, "events/kprobes/k2/filter"); s != "__probe_func == 0\n" {
		t.Errorf("k2 filter = %q", s)
	}
	if s := readString(t, fsys, "events/kprobes/k1/id"); s != "1554\n" {
		t.Errorf("k1 id = %q", s)
	}
}

// Concurrent writers, readers and enablers must not race (run with -race)
// and must all land.
func TestConcurrentUse(t *testing.T) {
	fsys := newRegistryFS(t)
	var wg sync.WaitGroup
	const n = 8
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("ev%d", i)
			if err := writeFile(fsys, "dynamic_events", "p:"+name+" vfs_read", false); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			writeFile(fsys, "kprobe_events", fmt.Sprintf("p:bad%d vfs_read %%zz", i), false)
			for _, f := range []string{"kprobe_events", "error_log", "kprobe_profile", "events/enable", "events/kprobes/" + name + "/format"} {
				h, err := fsys.Open(f, os.O_RDONLY)
				if err != nil {
					t.Errorf("open %s: %v", f, err)
					continue
				}
				buf := make([]byte, 64)
				for {
					if _, err := h.Read(buf); err != nil {
						break
					}
				}
				h.Close()
			}
			if err := writeFile(fsys, "events/kprobes/"+name+"/enable", "1", true); err != nil {
				t.Errorf("enable %s: %v", name, err)
			}
		}(i)
	}
	wg.Wait()
	if got := strings.Count(readString(t, fsys, "kprobe_events"), "\n"); got != n {
		t.Errorf("%d events, want %d", got, n)
	}
	if got := len(fsys.ErrorLog()); got != n {
		t.Errorf("%d error_log entries, want %d", got, n)
	}
	if got := readString(t, fsys, "events/enable"); got != "1\n" {
		t.Errorf("events/enable = %q", got)
	}
}
