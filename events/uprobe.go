package events

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
)

// FileID identifies a probed file as the kernel does (its inode), so that
// two paths to one file are the same uprobe target.
type FileID struct {
	Dev, Ino uint64
}

// PathLookup resolves a uprobe's PATH like the kernel's kern_path with
// LOOKUP_FOLLOW (the final symlink followed) and reports whether the file
// is a regular file. A failed lookup returns its errno (ENOENT, ENOTDIR,
// EACCES, ELOOP, ENAMETOOLONG...).
type PathLookup func(path string) (id FileID, regular bool, errno syscall.Errno)

// HostPathLookup looks paths up on the filesystem ktrace runs on, relative
// paths against the current directory, as the kernel resolves them against
// the writer's.
func HostPathLookup(path string) (FileID, bool, syscall.Errno) {
	fi, err := os.Stat(path)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return FileID{}, false, errno
		}
		return FileID{}, false, syscall.ENOENT
	}
	var id FileID
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id = FileID{Dev: uint64(st.Dev), Ino: st.Ino}
	}
	return id, fi.Mode().IsRegular(), 0
}

// SetPathLookup replaces how the registry resolves uprobe paths (nil:
// HostPathLookup).
func (r *Registry) SetPathLookup(f PathLookup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookupPath = f
}

// createUprobe is the kernel's uprobe create function (trace_uprobe) for
// one p/r line, check for check in the kernel's order.
func (r *Registry) createUprobe(argv []string) createResult {
	if argv[0][0] != 'p' && argv[0][0] != 'r' {
		return notMine
	}
	isReturn := argv[0][0] == 'r'
	if len(argv) < 2 {
		return notMine
	}
	// Since 6.12 the argument count is checked before the line is known
	// to be a uprobe's, and fails without a log.
	if r.dialect.TooManyArgs == grammar.ArgsE2BIG && len(argv)-2 > grammar.MaxTraceArgs {
		return createResult{err: &WriteError{Errno: syscall.E2BIG}}
	}
	// The event spec is taken only right after the letter: "p1:ev" and
	// "px:ev" drop the name.
	hasEvent := len(argv[0]) > 1 && argv[0][1] == ':'
	if !grammar.ClaimsUprobe(argv[1]) {
		return notMine
	}
	c := &lineCtx{r: r, subsys: "trace_uprobe", argv: argv}
	place, err := grammar.ParseUprobePlace(argv[1])
	if err != nil {
		return createResult{err: err}
	}
	lookup := r.lookupPath
	if lookup == nil {
		lookup = HostPathLookup
	}
	// kern_path takes an empty path as the writer's current directory
	// (only user-space names refuse empty paths).
	path := place.Path.Value
	if path == "" {
		path = "."
	}
	id, regular, errno := lookup(path)
	if errno != 0 {
		return c.failErrno(grammar.ErrFileNotFound, 1, 0, errno)
	}
	if !regular {
		return c.failErrno(grammar.ErrNoRegularFile, 1, 0, syscall.EINVAL)
	}
	site, ge := place.Site(argv[1])
	if ge != nil {
		return c.fail(ge)
	}
	if site.Return {
		isReturn = true
	}

	group, event := "uprobes", ""
	if hasEvent {
		head, err := grammar.ParseHead(argv[0])
		if err != nil {
			return createResult{err: err}
		}
		var ge *grammar.Error
		if group, event, ge = head.GroupEvent(group); ge != nil {
			return c.fail(ge)
		}
	}
	if event == "" {
		event = uprobeAutoName(site.Path, site.Offset)
	}

	ctx := &fetchargs.Context{
		Model:   r.model,
		Dialect: r.dialect,
		Kind:    fetchargs.UProbe,
		Return:  isReturn,
	}
	args, res, ok := c.parseArgs(ctx)
	if !ok {
		return res
	}
	kind := Uprobe
	if isReturn {
		kind = Uretprobe
	}
	p := &Probe{
		Offset: site.Offset,
		Args:   args,
		Uprobe: &UprobePlace{Path: site.Path, Offset: site.Offset, RefCtr: site.RefCtr, File: id},
	}
	return r.registerUprobe(c, kind, group, event, p)
}

// uprobeAutoName is the name of a uprobe event written without one:
// "p_" (also for return probes), the path's base name up to its first
// '.', '-' or '_', and the offset in hex, cut to the name length limit.
// The kernel does not check the result against the name rules.
func uprobeAutoName(path string, offset uint64) string {
	base := path
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.IndexAny(base, ".-_"); i >= 0 {
		base = base[:i]
	}
	return grammar.TruncateName(fmt.Sprintf("p_%s_0x%x", base, offset))
}

// registerUprobe is register_trace_uprobe: the reference counter check
// against every uprobe on the same file and offset, then appending to an
// existing uprobe event of the same name or creating the event.
func (r *Registry) registerUprobe(c *lineCtx, kind Kind, group, name string, p *Probe) createResult {
	u := p.Uprobe
	for _, q := range r.probes {
		if v := q.Uprobe; v != nil && v.File == u.File && v.Offset == u.Offset && v.RefCtr != u.RefCtr {
			// "Reference counter offset mismatch." goes to the kernel
			// log only.
			return createResult{err: &WriteError{Errno: syscall.EINVAL}}
		}
	}
	old := r.findEvent(group, name)
	if old != nil && old.Kind.IsUprobe() {
		if old.Kind.IsReturn() != kind.IsReturn() {
			return c.failErrno(grammar.ErrDiffProbeType, 0, 0, syscall.EEXIST)
		}
		if res, ok := c.checkAppend(old, p, func(q *Probe) bool {
			return q.Uprobe.File == u.File && q.Uprobe.Offset == u.Offset
		}); !ok {
			return res
		}
		p.Line = uprobeLine(kind, group, name, p)
		r.appendProbe(old, p)
		return createResult{}
	}
	if old != nil || isStaticEvent(r.dialect.Name, group, name) {
		return c.failErrno(grammar.ErrEventExist, 0, 0, syscall.EEXIST)
	}
	p.Line = uprobeLine(kind, group, name, p)
	r.addEvent(&Event{Group: group, Name: name, Kind: kind, Args: p.Args}, p)
	return createResult{}
}

// uprobeLine is the uprobe readback line (probes_seq_show): the letter,
// group/event, the typed path, the offset as 0x%016lx, the reference
// counter offset in parentheses when not 0, and the arguments.
func uprobeLine(kind Kind, group, name string, p *Probe) string {
	letter := 'p'
	if kind == Uretprobe {
		letter = 'r'
	}
	return string(appendArgs([]byte(fmt.Sprintf("%c:%s/%s %s", letter, group, name, uprobePlaceText(p.Uprobe))), p.Args))
}

// uprobePlaceText is the place as the readback prints it, which is also
// what a removal's place token must equal.
func uprobePlaceText(u *UprobePlace) string {
	s := fmt.Sprintf("%s:0x%016x", u.Path, u.Offset)
	if u.RefCtr != 0 {
		s += fmt.Sprintf("(0x%x)", u.RefCtr)
	}
	return s
}
