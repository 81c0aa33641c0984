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

// uprobe_profile lists every uprobe probe point, uretprobes included, in
// the order the probe points were created: the path as typed, the event
// name in 44 columns, the hits in 15 (the kernel's "  %s %-44s %15lu\n").
// Checked on 6.12.95 (tools/vmsh): a probe appended to "up" after "ur"
// was created is listed after "ur".
func TestUprobeProfile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	fsys := newRegistryFS(t)
	for _, l := range []string{"p:up " + exe + ":0x10", "r:grp/ur " + exe + ":0x20", "p:kp vfs_read", "p:up " + exe + ":0x30"} {
		if err := writeFile(fsys, "dynamic_events", l, false); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	line := func(ev string) string { return fmt.Sprintf("  %s %s%s %15d\n", exe, ev, strings.Repeat(" ", 42), 0) }
	want := line("up") + line("ur") + line("up")
	if got := readString(t, fsys, "uprobe_profile"); got != want {
		t.Errorf("uprobe_profile = %q, want %q", got, want)
	}
	if got := readString(t, fsys, "kprobe_profile"); !strings.HasPrefix(got, "  kp ") || strings.Count(got, "\n") != 1 {
		t.Errorf("kprobe_profile = %q, want the kprobe alone", got)
	}
}

// kprobe_profile follows the probe points' creation order too (6.1.192,
// tools/vmsh: a, b, a for "p:a vfs_read", "p:b vfs_write", "p:a vfs_open").
func TestKprobeProfileOrder(t *testing.T) {
	fsys := newRegistryFS(t)
	for _, l := range []string{"p:a vfs_read", "p:b vfs_write", "p:a vfs_open"} {
		if err := writeFile(fsys, "kprobe_events", l, false); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(readString(t, fsys, "kprobe_profile")), "\n") {
		names = append(names, strings.Fields(line)[0])
	}
	if got := strings.Join(names, " "); got != "a b a" {
		t.Errorf("kprobe_profile lists %s, want a b a", got)
	}
}
