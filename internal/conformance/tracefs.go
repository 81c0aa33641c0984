package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Tracefs drives a real tracefs mount: the guest side of the conformance
// run. Every control-file write is exactly one write(2), like a shell's
// echo, so the kernel sees the same buffer it would from `echo LINE >> FILE`.
type Tracefs struct {
	Root string // mount point, e.g. /sys/kernel/tracing
}

func (t *Tracefs) path(name string) string { return filepath.Join(t.Root, name) }

// write opens name with O_WRONLY|flags and writes data in one write(2)
// (none when data is empty). The error, if any, carries the kernel's errno.
func (t *Tracefs) write(name string, data []byte, flags int) error {
	fd, err := unix.Open(t.path(name), unix.O_WRONLY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	if len(data) == 0 {
		return nil
	}
	for {
		_, err = unix.Write(fd, data)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Append writes data to a control file as `echo DATA >> FILE` does.
func (t *Tracefs) Append(name string, data []byte) error {
	return t.write(name, data, unix.O_APPEND)
}

// Truncate opens a control file with O_TRUNC as `echo > FILE` does (which
// for dynamic_events and kprobe_events removes the events, and for
// error_log clears it).
func (t *Tracefs) Truncate(name string) error { return t.write(name, nil, unix.O_TRUNC) }

// Read returns a file's whole content.
func (t *Tracefs) Read(name string) (string, error) {
	b, err := os.ReadFile(t.path(name))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return string(b), nil
}

// ErrnoName is the symbolic name of the errno in err ("EINVAL"), "" for
// nil, and "errno N" for numbers without a name (kernel-internal codes).
func ErrnoName(err error) string {
	if err == nil {
		return ""
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		return "EUNKNOWN"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// errHead matches an error_log entry's first line:
// "[   12.345678] trace_kprobe: error: Message"; the location may hold
// colons ("hist:sched:sched_switch").
var errHead = regexp.MustCompile(`^\[\s*\d+\.\d+\] (.+?): error: (.*)$`)

// cmdPrefix starts an error_log entry's command line; the caret line below
// it is indented by len(cmdPrefix) + pos spaces.
const cmdPrefix = "  Command: "

// ParseErrorLog returns the last entry of an error_log text, or nil when it
// holds none.
func ParseErrorLog(s string) *LogEntry {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 3; i >= 0; i-- {
		m := errHead.FindStringSubmatch(lines[i])
		if m == nil || !strings.HasPrefix(lines[i+1], cmdPrefix) {
			continue
		}
		e := &LogEntry{Subsys: m[1], Msg: m[2], Cmd: strings.TrimPrefix(lines[i+1], cmdPrefix), Pos: -1}
		if c := strings.IndexByte(lines[i+2], '^'); c >= 0 && strings.TrimLeft(lines[i+2][:c], " ") == "" {
			e.Pos = c - len(cmdPrefix)
		}
		return e
	}
	return nil
}

// Lines splits a control file's content into lines, without the final
// newline; an empty file gives an empty, non-nil slice.
func Lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// EventNames extracts "GRP/EV" from dynamic_events (or kprobe_events)
// readback lines such as "r16:kprobes/ev sym arg1=$retval", in order of
// first appearance and without duplicates (multi-probe events have one line
// per probe). Comment lines are skipped.
func EventNames(readback []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range readback {
		if l == "" || l[0] == '#' {
			continue
		}
		// Synthetic events read back with a tab after the name.
		head, _, _ := strings.Cut(strings.ReplaceAll(l, "\t", " "), " ")
		_, name, ok := strings.Cut(head, ":")
		if !ok || !strings.Contains(name, "/") || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// clearEventFile removes what a case wrote to an events/ file: a filter
// is set to "0"; triggers go by an O_TRUNC open (which removes hist
// triggers only) and a "!" removal of each remaining one.
func (t *Tracefs) clearEventFile(name string) error {
	var err error
	if strings.HasSuffix(name, "/trigger") {
		err = t.Truncate(name)
		if err == nil {
			err = t.removeTriggers(name)
		}
	} else {
		err = t.Append(name, []byte("0\n"))
	}
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("clearing %s: %w", name, err)
	}
	return nil
}

// removeTriggers writes "!CMD" for each line of a trigger file
// ("traceon:count=3 if a == 1" is removed by "!traceon").
func (t *Tracefs) removeTriggers(name string) error {
	s, err := t.Read(name)
	if err != nil {
		return err
	}
	for _, l := range Lines(s) {
		if strings.HasPrefix(l, "#") {
			continue
		}
		l, _, _ = strings.Cut(l, " if ")
		l = strings.TrimSuffix(l, ":unlimited")
		if i := strings.LastIndex(l, ":count="); i >= 0 {
			l = l[:i]
		}
		if err := t.Append(name, []byte("!"+l+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// Clear leaves the tracefs as a case expects it: every event disabled
// (when disableFirst), no dynamic event, error_log empty, the local trace
// clock. An event probe
// attached to a synthetic or fprobe event created before it keeps that
// event, and truncating dynamic_events stops there with EBUSY (every
// time): the event probes are removed first, then the rest.
func (t *Tracefs) Clear(disableFirst bool) error {
	var errs []error
	if disableFirst {
		errs = append(errs, t.Append("events/enable", []byte("0\n")))
	}
	err := t.Truncate(DynamicEvents)
	if errors.Is(err, syscall.EBUSY) {
		if s, rerr := t.Read(DynamicEvents); rerr == nil {
			for _, l := range Lines(s) {
				if head, _, _ := strings.Cut(l, " "); strings.HasPrefix(head, "e:") {
					errs = append(errs, t.Append(DynamicEvents, []byte("-:"+head[2:]+"\n")))
				}
			}
		}
		err = t.Truncate(DynamicEvents)
	}
	// A hist trigger using common_timestamp sets the trace clock (to
	// global by default): every case starts from the kernel's default.
	errs = append(errs, err, t.Truncate("error_log"))
	if err := t.Append("trace_clock", []byte("local\n")); !errors.Is(err, syscall.ENOENT) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RunCase runs one case on the tracefs: it disables every event if the
// previous case enabled some (so clearing cannot fail with EBUSY), removes
// every dynamic event, clears error_log, writes the setup lines and enables
// the listed events, clears error_log again, then writes the case's line
// and records the outcome.
func (t *Tracefs) RunCase(c *Case, disableFirst bool) Result {
	r := Result{
		Corpus: c.Corpus, Index: c.Index, Line: c.Line, Setup: c.Setup, File: c.File, Enable: c.Enable,
		SetupErrnos: []string{}, Readback: []string{}, Formats: map[string]string{},
	}
	if r.Setup == nil {
		r.Setup = []string{}
	}
	problem := func(err error) { r.Problems = append(r.Problems, err.Error()) }

	if err := t.Clear(disableFirst); err != nil {
		problem(err)
	}
	for _, s := range c.Setup {
		file, line := SetupTarget(s, c.File)
		r.SetupErrnos = append(r.SetupErrnos, ErrnoName(t.Append(file, []byte(line+"\n"))))
	}
	enableFailed := false
	var enableErrs []string
	for _, ev := range c.Enable {
		err := t.Append("events/"+ev+"/enable", []byte("1\n"))
		enableErrs = append(enableErrs, ErrnoName(err))
		enableFailed = enableFailed || err != nil
	}
	if enableFailed {
		r.EnableErrs = enableErrs
	}
	if err := t.Truncate("error_log"); err != nil {
		problem(err)
	}

	werr := t.Append(c.File, []byte(c.Line+"\n"))
	r.OK, r.Errno = werr == nil, ErrnoName(werr)

	if s, err := t.Read("error_log"); err != nil {
		problem(err)
	} else {
		r.Error = ParseErrorLog(s)
	}
	if s, err := t.Read(c.File); err != nil {
		problem(err)
	} else {
		r.Readback = Lines(s)
	}
	if IsEventFile(c.File) {
		if strings.HasSuffix(c.File, "/trigger") {
			if s, err := t.Read(strings.TrimSuffix(c.File, "trigger") + "hist"); err == nil {
				r.Hist = Lines(s)
			}
		}
	}
	// Leave nothing behind for the next case: static events keep their
	// filters and triggers across the dynamic_events clear, and a trigger
	// keeps its event busy. A hist trigger whose variables another one
	// reads cannot go before that one: files that fail are tried again
	// after the others, until a round clears nothing more.
	var clear []string
	if IsEventFile(c.File) {
		clear = append(clear, c.File)
	}
	for i := len(c.Setup) - 1; i >= 0; i-- {
		if file, _ := SetupTarget(c.Setup[i], c.File); IsEventFile(file) && !slices.Contains(clear, file) {
			clear = append(clear, file)
		}
	}
	defer func() {
		for len(clear) > 0 {
			var left []string
			var errs []error
			for _, file := range clear {
				if err := t.clearEventFile(file); err != nil {
					left = append(left, file)
					errs = append(errs, err)
				}
			}
			if len(left) == len(clear) {
				for _, err := range errs {
					problem(err)
				}
				return
			}
			clear = left
		}
	}()
	dyn := r.Readback
	if c.File != DynamicEvents {
		if s, err := t.Read(DynamicEvents); err != nil {
			problem(err)
		} else {
			dyn = Lines(s)
		}
	}
	for _, ev := range EventNames(dyn) {
		s, err := t.Read("events/" + ev + "/format")
		switch {
		case errors.Is(err, syscall.ENOTDIR):
			// The event's name is a file of its parent there (6.1 makes
			// no directory for "p:grp/enable"): it has no format to read.
		case err != nil:
			problem(err)
		default:
			r.Formats[ev] = s
		}
	}
	return r
}
