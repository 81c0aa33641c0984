package kernel

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
	"github.com/ktrace-dev/ktrace/printfmt"
)

//go:generate go run ./internal/tpgen -src ../../shared/kernels/6.12 -out tracepoints-6.12.bin

// FileTracepoints is the directory of a snapshot holding the tracepoints
// as tracefs shows them: available_events ("SYSTEM:EVENT" lines) and
// events/SYSTEM/EVENT/format. It is also the member name of the embedded
// tracepoint blob.
const FileTracepoints = "tracepoints"

// embeddedTracepoints holds the tracepoint formats of the embedded 6.12
// snapshot's kernel (the same 6.12.95 boot), packed by tpgen.
//
//go:embed tracepoints-6.12.bin
var embeddedTracepoints []byte

// ErrNoTracepoints is returned by Tracepoints when the model has no
// tracepoint formats.
var ErrNoTracepoints = errors.New("the kernel model has no tracepoint formats")

// Tracepoint is one trace event of the kernel's static tracepoints:
// events/SYSTEM/NAME.
type Tracepoint struct {
	System string
	Name   string
	Format string // the events/SYSTEM/NAME/format file
	// Seq is the event's place in the kernel's event list, the order of
	// available_events (0 first); -1 when the source does not say.
	Seq int
}

// ID is the event's ID, the "ID:" line of its format file (the
// common_type of its records); 0 when the format has none.
func (t *Tracepoint) ID() int {
	for _, l := range strings.SplitN(t.Format, "\n", 4) {
		if v, ok := strings.CutPrefix(l, "ID: "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// TracepointField is one "field:" line of a format file.
type TracepointField struct {
	Decl   string // the C declaration, e.g. "char prev_comm[16]"
	Name   string // the field name, e.g. "prev_comm"
	Type   string // the declaration without the name, e.g. "char[16]"
	Offset int
	Size   int
	Signed bool
	Common bool // the common_* header fields every event has
}

// Fields parses the format's field lines.
func (t *Tracepoint) Fields() []TracepointField {
	var out []TracepointField
	common := true
	for _, line := range strings.Split(t.Format, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			if len(out) > 0 {
				common = false
			}
			continue
		}
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		// A number that does not parse is taken as strconv.Atoi reads
		// it: the Fields of a tracepoint are a listing, not a check.
		fl, _ := printfmt.ParseFieldLine(line)
		f := TracepointField{Decl: fl.Decl, Offset: fl.Offset, Size: fl.Size, Signed: fl.Signed, Common: common}
		f.Name, f.Type = printfmt.SplitDecl(f.Decl)
		out = append(out, f)
	}
	return out
}

// tracepointSet caches the model's tracepoints.
type tracepointSet struct {
	once   sync.Once
	tps    []Tracepoint
	source string
	err    error
}

var tpSets sync.Map // *Model -> *tracepointSet

// Tracepoints returns the model's tracepoints sorted by system and name,
// and where they were read: the embedded model's formats (packed from
// the same 6.12.95 boot), a snapshot directory's tracepoints/, or the
// running kernel's tracefs events/. It returns ErrNoTracepoints (wrapped)
// when the model has none; kallsyms still names the tracepoints
// (TracepointNames) but not their systems or fields.
func (m *Model) Tracepoints() ([]Tracepoint, string, error) {
	v, _ := tpSets.LoadOrStore(m, &tracepointSet{})
	s := v.(*tracepointSet)
	s.once.Do(func() { s.tps, s.source, s.err = m.loadTracepoints() })
	return s.tps, s.source, s.err
}

func (m *Model) loadTracepoints() ([]Tracepoint, string, error) {
	switch m.source {
	case "embedded":
		a, err := blob.Parse(embeddedTracepoints)
		if err != nil {
			return nil, "", fmt.Errorf("embedded tracepoints: %w", err)
		}
		b, err := a.Read(FileTracepoints)
		if err != nil {
			return nil, "", fmt.Errorf("embedded tracepoints: %w", err)
		}
		tps, err := decodeTracepoints(b)
		return tps, "embedded (6.12.95 tracefs events/)", err
	case "host":
		dir := tracingDir()
		if dir == "" {
			return nil, "", fmt.Errorf("%w: no tracefs with kprobe_events on this system", ErrNoTracepoints)
		}
		tps, err := readEventsDir(filepath.Join(dir, "events"))
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrNoTracepoints, err)
		}
		return tps, filepath.Join(dir, "events"), nil
	}
	tps, err := ReadTracepointDir(m.source)
	if err != nil {
		return nil, "", err
	}
	return tps, filepath.Join(m.source, FileTracepoints), nil
}

// ReadTracepointDir reads the tracepoints of a snapshot directory: the
// events listed in DIR/tracepoints/available_events with their formats.
func ReadTracepointDir(dir string) ([]Tracepoint, error) {
	base := filepath.Join(dir, FileTracepoints)
	list, err := os.ReadFile(filepath.Join(base, "available_events"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTracepoints, err)
	}
	var tps []Tracepoint
	for _, line := range strings.Split(string(list), "\n") {
		sys, name, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		f, err := os.ReadFile(filepath.Join(base, "events", sys, name, "format"))
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s:%s: %w", sys, name, err)
		}
		tps = append(tps, Tracepoint{System: sys, Name: name, Format: string(f), Seq: len(tps)})
	}
	sortTracepoints(tps)
	return tps, nil
}

// readEventsDir reads a tracefs events/ directory: every
// SYSTEM/EVENT/format. Dynamic events (kprobes, fprobes) are skipped.
func readEventsDir(dir string) ([]Tracepoint, error) {
	formats, err := filepath.Glob(filepath.Join(dir, "*", "*", "format"))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	if len(formats) == 0 {
		return nil, fmt.Errorf("no event formats readable in %s", dir)
	}
	seq := map[string]int{}
	if list, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "available_events")); err == nil {
		for i, l := range strings.Split(strings.TrimSpace(string(list)), "\n") {
			seq[strings.Replace(l, ":", "/", 1)] = i
		}
	}
	// Dynamic events (anyone's probes, ktrace's own ktrace_PID groups)
	// are not tracepoints: skip those dynamic_events lists.
	dynamic := map[string]bool{}
	if list, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "dynamic_events")); err == nil {
		for _, l := range strings.Split(string(list), "\n") {
			head, _, _ := strings.Cut(l, " ")
			if _, name, ok := strings.Cut(head, ":"); ok {
				dynamic[name] = true
			}
		}
	}
	var tps []Tracepoint
	for _, p := range formats {
		ev := filepath.Dir(p)
		sys := filepath.Base(filepath.Dir(ev))
		switch sys {
		case "kprobes", "fprobes", "tracepoints", "ftrace":
			continue
		}
		if strings.HasPrefix(sys, "ktrace_") || dynamic[sys+"/"+filepath.Base(ev)] {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, ok := seq[sys+"/"+filepath.Base(ev)]
		if !ok {
			n = -1
		}
		tps = append(tps, Tracepoint{System: sys, Name: filepath.Base(ev), Format: string(b), Seq: n})
	}
	sortTracepoints(tps)
	return tps, nil
}

func sortTracepoints(tps []Tracepoint) {
	slices.SortFunc(tps, func(a, b Tracepoint) int {
		if c := strings.Compare(a.System, b.System); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// SortKernelOrder sorts tracepoints into the kernel's event-list order
// (Seq); those without a place follow, by system and name.
func SortKernelOrder(tps []Tracepoint) {
	slices.SortStableFunc(tps, func(a, b Tracepoint) int {
		switch {
		case a.Seq >= 0 && b.Seq >= 0:
			return a.Seq - b.Seq
		case a.Seq >= 0:
			return -1
		case b.Seq >= 0:
			return 1
		}
		if c := strings.Compare(a.System, b.System); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// EncodeTracepoints packs tracepoints as the embedded member stores them:
// "SYSTEM:NAME\n" then the format, each record ended by a NUL byte, in
// the kernel's order (decoding gives each its Seq back).
func EncodeTracepoints(tps []Tracepoint) []byte {
	tps = slices.Clone(tps)
	SortKernelOrder(tps)
	var b strings.Builder
	for _, t := range tps {
		b.WriteString(t.System + ":" + t.Name + "\n" + t.Format + "\x00")
	}
	return []byte(b.String())
}

func decodeTracepoints(b []byte) ([]Tracepoint, error) {
	var tps []Tracepoint
	for _, rec := range strings.Split(string(b), "\x00") {
		if rec == "" {
			continue
		}
		head, format, ok := strings.Cut(rec, "\n")
		sys, name, ok2 := strings.Cut(head, ":")
		if !ok || !ok2 {
			return nil, fmt.Errorf("embedded tracepoints: bad record %.40q", rec)
		}
		tps = append(tps, Tracepoint{System: sys, Name: name, Format: format, Seq: len(tps)})
	}
	sortTracepoints(tps)
	return tps, nil
}

// TracepointNames returns the names of the tracepoints kallsyms shows
// (its __tracepoint_NAME symbols), sorted. kallsyms does not say which
// system a tracepoint belongs to.
func (m *Model) TracepointNames() []string {
	var out []string
	for i := range m.syms.len() {
		s := m.syms.at(int(i))
		if s.Module != "" {
			continue
		}
		if n, ok := strings.CutPrefix(s.Name, "__tracepoint_"); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HasTracepoint reports whether kallsyms has the tracepoint NAME
// (__tracepoint_NAME), which a "t" event attaches to.
func (m *Model) HasTracepoint(name string) bool {
	return len(m.Symbols("", "__tracepoint_"+name)) > 0
}

// HasProbeStub reports whether kallsyms has __probestub_NAME, the function
// whose BTF prototype types a "t" event's arguments (Linux 6.10+).
func (m *Model) HasProbeStub(name string) bool {
	return len(m.Symbols("", "__probestub_"+name)) > 0
}
