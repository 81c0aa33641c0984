package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/ktrace-dev/ktrace/tracefs"
)

// MaxWrite is the largest FUSE write request the mount accepts: the Linux
// default of 32 pages.
const MaxWrite = 128 << 10

// pageSize bounds how much smaller than MaxWrite a piece of a split write(2)
// can be (the user buffer's offset in its first page).
const pageSize = 4096

// splitMin is the smallest request that may be a piece of a larger write(2).
const splitMin = MaxWrite - pageSize

// Options configures a mount.
type Options struct {
	// AllowOther lets users other than the mounting user reach the mount
	// (the FUSE allow_other option, which needs root or user_allow_other
	// in /etc/fuse.conf). What they can do there is what the tree's modes
	// and owners grant them; see Permissions in the package comment.
	AllowOther bool
	// FsName is the source shown in /proc/mounts; default "ktrace".
	FsName string
	// Debug logs every FUSE request on stderr.
	Debug bool
	// SelfAccess is for a process that reads its own mount (tests that
	// serve and read in one process): the kernel is then taught at once
	// that the server does not answer poll requests (go-fuse's
	// WaitMount), which the Go runtime would otherwise send it from its
	// own poller. A server that only serves others goes without (see
	// Mount).
	SelfAccess bool
}

// Server is a mounted tracefs.
type Server struct {
	t    *tree
	dir  string
	srv  *fuse.Server
	once sync.Once
	err  error
	// proxied: ktrace holds the device (devproxy.go); go-fuse serves a
	// socket and cannot unmount.
	proxied bool
}

// Mount mounts fsys on dir and starts serving it. The mount is ready when
// Mount returns. Call Unmount to end it; Wait blocks until it ends.
func Mount(dir string, fsys *tracefs.FS, opts Options) (*Server, error) {
	if fsys == nil {
		return nil, errors.New("fusefs: nil tracefs")
	}
	if opts.FsName == "" {
		opts.FsName = "ktrace"
	}
	root := &node{t: &tree{fs: fsys, opts: opts, inos: map[string]uint64{"/": 1}, next: 2}, path: "/"}
	zero := time.Duration(0)
	fo := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther: opts.AllowOther,
			// The kernel checks the modes and owners, as on tracefs.
			Options:       []string{"default_permissions"},
			FsName:        opts.FsName,
			Name:          "ktrace",
			MaxWrite:      MaxWrite,
			DirectMount:   true,
			Debug:         opts.Debug,
			DisableXAttrs: true,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	}
	raw := newStreamGuard(gofs.NewNodeFS(root, fo))
	root.t.guard = raw
	srv, proxied, err := serve(dir, raw, fo.MountOptions, opts.SelfAccess)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	// The mount answers: the kernel's INIT has been answered. go-fuse's
	// WaitMount would now open a file in it (its poll workaround, for
	// servers that read their own mount, which this one never does). A
	// server killed while it holds a file of its own mount open cannot
	// exit: exit closes its files first, the close of that one sends a
	// FLUSH that only the dying server could answer, and the release of
	// /dev/fuse that would abort the connection comes after (seen: a
	// mount killed right after it came up stayed in D state, and its
	// mount hung). So no WaitMount, unless this process reads its own
	// mount (Options.SelfAccess) and go-fuse reads the device itself; the
	// device proxy answers the poll requests of a SelfAccess server with
	// ENOSYS on its own.
	closeOnExecDevice()
	go srv.Serve()
	if opts.SelfAccess && !proxied {
		if err := srv.WaitMount(); err != nil {
			srv.Unmount()
			return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
		}
	}
	if opts.SelfAccess && proxied {
		if err := provokePoll(dir); err != nil {
			srv.Unmount()
			return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
		}
	}
	return &Server{t: root.t, dir: dir, srv: srv, proxied: proxied}, nil
}

// provokePoll has the kernel ask the mount's poll answer once, now, from
// a system call the Go runtime knows may block: the device proxy answers
// a SelfAccess server's FUSE_POLL with ENOSYS, after which the kernel
// asks no more. Otherwise the first os.Open of a file of the mount by
// this process would ask it: the runtime registers the file with its
// netpoller through an epoll_ctl it takes for non-blocking and makes on
// a P, and when the proxy's goroutine that must answer finds no free P
// (a garbage collection waiting for that one), the process hangs (Go
// issue 21014; seen in this package's tests, 3 times in one afternoon).
func provokePoll(dir string) error {
	fd, err := unix.Open(filepath.Join(dir, "README"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("poll probe: %w", err)
	}
	defer unix.Close(fd)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("poll probe: %w", err)
	}
	defer unix.Close(ep)
	// Not unix.EpollCtl: it makes the call as one that never blocks,
	// on this goroutine's P, which is the hang this probe prevents.
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if _, _, e := syscall.Syscall6(syscall.SYS_EPOLL_CTL, uintptr(ep), unix.EPOLL_CTL_ADD, uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		return fmt.Errorf("poll probe: epoll_ctl: %w", e)
	}
	return nil
}

// closeOnExecDevice marks this process's /dev/fuse descriptors
// close-on-exec (go-fuse's direct mount opens it without): a program the
// server runs (the probe reaper, fusermount) must not keep the connection
// alive after the server has gone.
func closeOnExecDevice() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "/dev/fuse" {
			syscall.CloseOnExec(n)
		}
	}
}

// Locked runs f while no FUSE request is using the tracefs, for callers
// that change the registry behind the mount (see tree.fsmu).
func (s *Server) Locked(f func()) {
	s.t.fsmu.Lock()
	defer s.t.fsmu.Unlock()
	f()
}

// Dir is the mount point.
func (s *Server) Dir() string { return s.dir }

// Wait blocks until the filesystem is unmounted (by Unmount, umount(8) or
// fusermount -u).
func (s *Server) Wait() { s.srv.Wait() }

// Unmount unmounts the filesystem. When it is busy (a process has its
// working directory or an open file in it) it retries for a second, then
// detaches it lazily: the mount disappears from the namespace at once and
// the kernel drops it when its last user goes.
func (s *Server) Unmount() error {
	s.once.Do(func() {
		var err error
		for i := 0; i < 10; i++ {
			if err = s.unmountOnce(); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if derr := syscall.Unmount(s.dir, syscall.MNT_DETACH); derr != nil {
			s.err = fmt.Errorf("fusefs: unmount %s: %w (lazy unmount: %v)", s.dir, err, derr)
		}
	})
	return s.err
}

// unmountOnce tries to unmount, and when that worked waits for the
// server's loops to end.
func (s *Server) unmountOnce() error {
	if !s.proxied {
		return s.srv.Unmount()
	}
	if err := syscall.Unmount(s.dir, 0); err != nil {
		return err
	}
	// The connection ends with the mount: the proxy finds ENODEV and
	// ends go-fuse's loops.
	s.srv.Wait()
	return nil
}

// serve mounts dir and makes go-fuse's server for it. Where ktrace may
// mount by itself (CAP_SYS_ADMIN), it holds the device and go-fuse
// serves the proxy's socket (proxied); otherwise go-fuse mounts (through
// fusermount) and serves the device, and poll(2) finds every file always
// ready.
func serve(dir string, raw *streamGuard, mo fuse.MountOptions, selfAccess bool) (srv *fuse.Server, proxied bool, err error) {
	dev, merr := mountDevice(dir, &mo)
	if merr != nil {
		srv, err = fuse.NewServer(raw, dir, &mo)
		return srv, false, err
	}
	p, fd, err := startProxy(dev, raw, selfAccess)
	if err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		syscall.Close(dev)
		return nil, false, err
	}
	mo.DirectMount = false
	mo.DisableSplice = true
	// go-fuse's readers find end of file when the proxy stops.
	mo.Logger = log.New(&dropLines{w: os.Stderr, drop: []byte("Failed to read from fuse conn: 22=invalid argument")}, "", log.LstdFlags)
	srv, err = fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), &mo)
	if err != nil {
		p.stop()
		syscall.Unmount(dir, syscall.MNT_DETACH)
		return nil, false, err
	}
	return srv, true, nil
}

// ErrMounted reports that a mount point already holds a live ktrace mount.
var ErrMounted = errors.New("already a live ktrace mount")

// fsType is the type of a ktrace mount in /proc/self/mountinfo.
const fsType = "fuse.ktrace"

// PrepareMountPoint checks dir before Mount. It must be a directory. A dead
// ktrace mount on it, the one a killed server leaves behind (every access
// fails with ENOTCONN, "Transport endpoint is not connected"), is detached,
// as are dead ones stacked below it; cleared counts them. A live ktrace
// mount on dir is refused with an error wrapping ErrMounted: mounting would
// hide it. A dead FUSE mount of another program is left alone and
// reported. A dir that does not exist or is no directory is an error
// that says so in the user's words (and wraps os.ErrNotExist or
// syscall.ENOTDIR).
func PrepareMountPoint(dir string) (cleared int, err error) {
	cleared, err = prepareMountPoint(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		err = &mountPointError{fmt.Sprintf("%s does not exist; create the directory first (mkdir -p %s)", dir, dir), err}
	case errors.Is(err, syscall.ENOTDIR):
		err = &mountPointError{dir + " is not a directory", err}
	}
	return cleared, err
}

// mountPointError is a mount point's error worded for the user: msg is
// all of its text.
type mountPointError struct {
	msg string
	err error
}

func (e *mountPointError) Error() string { return e.msg }
func (e *mountPointError) Unwrap() error { return e.err }

func prepareMountPoint(dir string) (cleared int, err error) {
	abs, err := mountPath(dir)
	if err != nil {
		return 0, err
	}
	for {
		var st syscall.Stat_t
		serr := syscall.Stat(abs, &st)
		top, _ := topMount(abs)
		switch {
		case errors.Is(serr, syscall.ENOTCONN) && top == fsType:
			if err := syscall.Unmount(abs, syscall.MNT_DETACH); err != nil {
				return cleared, fmt.Errorf("fusefs: clearing the dead ktrace mount on %s: %w", dir, err)
			}
			cleared++
			continue
		case errors.Is(serr, syscall.ENOTCONN):
			return cleared, fmt.Errorf("fusefs: %s: %w (a dead %s mount, not ktrace's: unmount it first)", dir, serr, top)
		case serr != nil:
			return cleared, fmt.Errorf("fusefs: mount point %s: %w", dir, serr)
		case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
			return cleared, fmt.Errorf("fusefs: mount point %s: %w", dir, syscall.ENOTDIR)
		case top == fsType:
			return cleared, fmt.Errorf("fusefs: %s is %w (its ktrace is running): unmount it first (SIGTERM to that ktrace, or umount %s)", dir, ErrMounted, dir)
		}
		return cleared, nil
	}
}

// mountPath is dir as /proc/self/mountinfo spells a mount point on it:
// absolute, with the symbolic links of its parent resolved (dir itself
// cannot be resolved while a dead mount sits on it).
func mountPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("fusefs: mount point %s: %w", dir, err)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("fusefs: mount point %s: %w", dir, err)
	}
	abs = filepath.Join(parent, filepath.Base(abs))
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	return abs, nil
}

// topMount returns the file system type of the newest mount on the mount
// point abs in this mount namespace, "" if there is none.
func topMount(abs string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("fusefs: %w", err)
	}
	typ := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		// Field 5 is the mount point; the type follows the "-"
		// separator.
		if len(f) < 5 || unescapeMountinfo(f[4]) != abs {
			continue
		}
		for i, x := range f {
			if x == "-" && i+1 < len(f) {
				typ = f[i+1]
				break
			}
		}
	}
	return typ, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stableTimeout is how long the kernel may keep the entry of a path that
// exists for the life of the mount (tracefs.FS.Stable); the others are
// looked up on every use, so that events appear and disappear at once.
const stableTimeout = time.Hour

// tree is what every node of one mount shares.
type tree struct {
	fs   *tracefs.FS
	opts Options

	// fsmu serialises the mount's calls into tracefs. tracefs and the
	// events registry are safe for concurrent use as far as their own
	// locks go, but the event list tracefs reads (events.Registry.Events)
	// hands out the registry's live events, whose fields a concurrent
	// removal or enable changes; one request at a time keeps FUSE clients
	// from racing on them.
	fsmu sync.Mutex

	mu   sync.Mutex
	inos map[string]uint64 // stable inode number per path
	next uint64
	// edits are the handles last opened for writing on each path, by
	// opener: the SETATTR that carries an O_TRUNC comes without its
	// file handle, and the truncation of set_ftrace_filter belongs to
	// the open that asked for it (guarded by mu).
	edits map[editKey]*handle
	// guard is the mount's raw file system wrapper, which keeps the open
	// handles by FUSE file handle.
	guard *streamGuard
}

// editKey is a path and the process that opened it.
type editKey struct {
	path string
	pid  uint32
}

// noteEdit remembers h as the latest open for writing of p by the
// caller of ctx.
func (t *tree) noteEdit(p string, h *handle, ctx context.Context) {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.edits == nil {
		t.edits = map[editKey]*handle{}
	}
	t.edits[editKey{p, c.Pid}] = h
}

// takeEdit finds the handle a truncation of p is for: f when the kernel
// names it, else the caller's latest open of p for writing (forgotten
// from here on).
func (t *tree) takeEdit(p string, f gofs.FileHandle, ctx context.Context) *handle {
	if h, ok := f.(*handle); ok {
		return h
	}
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := editKey{p, c.Pid}
	h := t.edits[k]
	delete(t.edits, k)
	return h
}

// dropEdit forgets h (released).
func (t *tree) dropEdit(h *handle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.edits {
		if v == h {
			delete(t.edits, k)
		}
	}
}

// ino returns the inode number of p, allocating one on first sight so that
// a path keeps its number for the life of the mount.
func (t *tree) ino(p string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.inos[p]
	if !ok {
		n = t.next
		t.next++
		t.inos[p] = n
	}
	return n
}

// unixMode turns a tracefs mode into st_mode.
func unixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	if m.IsDir() {
		return syscall.S_IFDIR | u
	}
	return syscall.S_IFREG | u
}

// node is one path of the tracefs tree. Nodes hold no state of their own:
// every operation asks tracefs, so events appearing and disappearing are
// seen at once.
type node struct {
	gofs.Inode
	t    *tree
	path string // absolute within the mount, "/" for the root
}

var (
	_ gofs.NodeLookuper  = (*node)(nil)
	_ gofs.NodeReaddirer = (*node)(nil)
	_ gofs.NodeGetattrer = (*node)(nil)
	_ gofs.NodeSetattrer = (*node)(nil)
	_ gofs.NodeOpener    = (*node)(nil)
	_ gofs.NodeCreater   = (*node)(nil)
	_ gofs.NodeMkdirer   = (*node)(nil)
	_ gofs.NodeRmdirer   = (*node)(nil)
)

// errno extracts the syscall.Errno of a tracefs error; errors without one
// become EIO.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

func (n *node) fill(fi os.FileInfo, p string, a *fuse.Attr) {
	a.Ino = n.t.ino(p)
	a.Mode = unixMode(fi.Mode())
	a.Size = 0
	if isTracePipe(p) {
		// Non-zero, so that sendfile(2) asks and falls back to read(2):
		// see streamGuard.
		a.Size = pageSize
	}
	if !fi.IsDir() && !isTracePipe(p) {
		// The content's length, for sendfile(2) and splice(2): see "File
		// sizes" in the package comment. Reading trace_pipe would
		// consume it.
		if b, err := n.t.fs.ReadFile(p); err == nil {
			a.Size = uint64(len(b))
		}
	}
	a.Nlink = 1
	if fi.IsDir() {
		a.Nlink = 2
	}
	if o, ok := fi.Sys().(tracefs.Owner); ok {
		a.Uid, a.Gid = o.UID, o.GID
	}
	a.SetTimes(nil, ptr(fi.ModTime()), ptr(fi.ModTime()))
}

func ptr[T any](v T) *T { return &v }

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	p := path.Join(n.path, name)
	fi, err := n.t.fs.Stat(p)
	if err != nil {
		return nil, errno(err)
	}
	n.fill(fi, p, &out.Attr)
	if n.t.fs.Stable(p) {
		// The entry never goes away nor changes kind: the kernel may
		// keep it, and resolve the path without asking again. Its
		// attributes (the size of its content) are asked each time.
		out.SetEntryTimeout(stableTimeout)
	}
	child := &node{t: n.t, path: p}
	st := gofs.StableAttr{Mode: out.Attr.Mode & syscall.S_IFMT, Ino: out.Attr.Ino}
	return n.NewInode(ctx, child, st), 0
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	ents, err := n.t.fs.ReadDir(n.path)
	if err != nil {
		return nil, errno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		mode := uint32(syscall.S_IFREG)
		if e.IsDir() {
			mode = syscall.S_IFDIR
		}
		list = append(list, fuse.DirEntry{Name: e.Name(), Mode: mode, Ino: n.t.ino(path.Join(n.path, e.Name()))})
	}
	return gofs.NewListDirStream(list), 0
}

func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	return n.getattr(out)
}

func (n *node) getattr(out *fuse.AttrOut) syscall.Errno {
	fi, err := n.t.fs.Stat(n.path)
	if err != nil {
		return errno(err)
	}
	n.fill(fi, n.path, &out.Attr)
	return 0
}

// Setattr carries the truncation of an O_TRUNC open (see the package
// comment); other attribute changes are accepted and ignored, as tracefs
// keeps no attributes worth changing.
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	if sz, ok := in.GetSize(); ok {
		if sz != 0 {
			return syscall.EINVAL
		}
		if fh := n.t.takeEdit(n.path, f, ctx); fh != nil && fh.f.TruncateEdit() {
			// The truncation of an open set_ftrace_filter is its
			// edit's: it starts from an empty selection.
			return n.getattr(out)
		}
		h, err := n.t.fs.Open(n.path, os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return errno(err)
		}
		h.Close()
	}
	return n.getattr(out)
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	h, err := n.t.fs.Open(n.path, int(flags))
	if err != nil {
		return nil, 0, errno(err)
	}
	if c, ok := fuse.FromContext(ctx); ok {
		// A trace_marker entry names the process that writes it.
		h.SetCaller(int(c.Pid))
	}
	fh, flags := newHandle(n.t, h, n.path)
	n.t.opened(ctx, fh)
	if h.Edits() {
		n.t.noteEdit(n.path, fh, ctx)
	}
	if c, ok := fuse.FromContext(ctx); ok {
		fh.opener = c.Pid
	}
	return fh, flags, 0
}

// tracePipe is the path of the file whose reads wait and consume; each
// tracing instance has one too (isTracePipe).
const tracePipe = "/trace_pipe"

// isTracePipe reports whether p is the top level's trace_pipe or an
// instance's (/instances/NAME/trace_pipe).
func isTracePipe(p string) bool {
	if p == tracePipe {
		return true
	}
	dir, base := path.Split(p)
	return base == "trace_pipe" && path.Dir(path.Clean(dir)) == "/instances"
}

// newHandle wraps an open tracefs file for the mount. trace_pipe is a
// stream: no offsets, no seeking (FOPEN_STREAM, as the kernel's
// nonseekable trace_pipe).
func newHandle(t *tree, f *tracefs.File, p string) (*handle, uint32) {
	h := &handle{t: t, f: f, control: p == "/kprobe_events" || p == "/dynamic_events", pipe: isTracePipe(p)}
	flags := uint32(fuse.FOPEN_DIRECT_IO)
	if h.pipe {
		flags |= fuse.FOPEN_STREAM | fuse.FOPEN_NONSEEKABLE
	}
	return h, flags
}

// Mkdir makes a tracing instance (instances/NAME); tracefs refuses any
// other directory.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	p := path.Join(n.path, name)
	if err := n.t.fs.Mkdir(p); err != nil {
		return nil, errno(err)
	}
	fi, err := n.t.fs.Stat(p)
	if err != nil {
		return nil, errno(err)
	}
	n.fill(fi, p, &out.Attr)
	child := &node{t: n.t, path: p}
	st := gofs.StableAttr{Mode: out.Attr.Mode & syscall.S_IFMT, Ino: out.Attr.Ino}
	return n.NewInode(ctx, child, st), 0
}

// Rmdir removes a tracing instance.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p := path.Join(n.path, name)
	// close(2) does not wait for a FUSE file's release: a file of the
	// instance its caller has just closed may still count as open here,
	// where the kernel's close is done before rmdir runs. So EBUSY is
	// answered only once it has held for rmdirGrace.
	deadline := time.Now().Add(rmdirGrace)
	for {
		n.t.fsmu.Lock()
		err := n.t.fs.Rmdir(p)
		n.t.fsmu.Unlock()
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) || ctx.Err() != nil {
			return errno(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rmdirGrace is how long rmdir waits for the releases of files closed
// before it.
const rmdirGrace = time.Second

// Create answers like tracefs: no file can be created in it.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	n.t.fsmu.Lock()
	defer n.t.fsmu.Unlock()
	p := path.Join(n.path, name)
	h, err := n.t.fs.Open(p, int(flags)|os.O_CREATE)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	// The name exists after all (an event re-created between the kernel's
	// lookup and this call): O_CREAT without O_EXCL opens an existing file,
	// so serve it as Lookup and Open would.
	if flags&syscall.O_EXCL != 0 {
		h.Close()
		return nil, nil, 0, syscall.EEXIST
	}
	fi, err := n.t.fs.Stat(p)
	if err != nil {
		h.Close()
		return nil, nil, 0, errno(err)
	}
	n.fill(fi, p, &out.Attr)
	if n.t.fs.Stable(p) {
		// The entry never goes away nor changes kind: the kernel may
		// keep it, and resolve the path without asking again. Its
		// attributes (the size of its content) are asked each time.
		out.SetEntryTimeout(stableTimeout)
	}
	child := &node{t: n.t, path: p}
	st := gofs.StableAttr{Mode: out.Attr.Mode & syscall.S_IFMT, Ino: out.Attr.Ino}
	fh, flags := newHandle(n.t, h, p)
	n.t.opened(ctx, fh)
	if h.Edits() {
		n.t.noteEdit(p, fh, ctx)
	}
	return n.NewInode(ctx, child, st), fh, flags, 0
}

// handle is one open file.
type handle struct {
	t       *tree
	mu      sync.Mutex
	f       *tracefs.File
	off     int64  // read offset of f
	control bool   // kprobe_events or dynamic_events
	pipe    bool   // trace_pipe
	pending []byte // unfinished last line of a split write(2)
	opener  uint32 // the process that opened it
}

var (
	_ gofs.FileReader   = (*handle)(nil)
	_ gofs.FileWriter   = (*handle)(nil)
	_ gofs.FileFlusher  = (*handle)(nil)
	_ gofs.FileReleaser = (*handle)(nil)
)

// opened tells the raw wrapper which handle the request of ctx opened.
func (t *tree) opened(ctx context.Context, h *handle) {
	if t.guard == nil {
		return
	}
	// go-fuse's request context is done on its cancel channel.
	t.guard.opened(ctx.Done(), h)
}

// poll answers poll(2) on the file (tracefs.File.Poll). trace_pipe's
// answer may wait for the backend, so it runs outside fsmu as its reads
// do.
func (h *handle) poll() uint32 {
	if !h.pipe {
		h.t.fsmu.Lock()
		defer h.t.fsmu.Unlock()
	}
	return h.f.Poll()
}

// pollReady is tracefs.File.PollReady for a waiting poller.
func (h *handle) pollReady(events uint32) bool {
	if !h.pipe {
		h.t.fsmu.Lock()
		defer h.t.fsmu.Unlock()
	}
	return h.f.PollReady(events)
}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.pipe {
		return h.readPipe(ctx, dest)
	}
	h.t.fsmu.Lock()
	defer h.t.fsmu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if off != h.off {
		if _, err := h.f.Seek(off, io.SeekStart); err != nil {
			return nil, errno(err)
		}
		h.off = off
	}
	n := 0
	for n < len(dest) {
		m, err := h.f.Read(dest[n:])
		n += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if n > 0 {
				break
			}
			return nil, errno(err)
		}
	}
	h.off += int64(n)
	return fuse.ReadResultData(dest[:n]), 0
}

// readPipe is one read(2) of trace_pipe: one consuming read, which waits
// for entries as the kernel's does. It runs outside fsmu (and h.mu), so
// that the writes that enable, disable or remove events, and the other
// readers, go on while it waits. The kernel's FUSE client turns a signal
// to the reader into an interrupt request, which ends ctx: the read then
// fails with EINTR and the reader can die or retry.
func (h *handle) readPipe(ctx context.Context, dest []byte) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadContext(ctx, dest)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.t.fsmu.Lock()
	defer h.t.fsmu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	buf := data
	if len(h.pending) > 0 {
		buf = append(h.pending, data...)
		h.pending = nil
	}
	var hold []byte
	if h.control && len(data) >= splitMin && data[len(data)-1] != '\n' {
		cut := 0
		for i := len(buf) - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				cut = i + 1
				break
			}
		}
		hold = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	if len(buf) > 0 {
		n, err := h.f.Write(buf)
		if err != nil {
			return 0, errno(err)
		}
		if n < len(buf) && hold == nil && len(buf) == len(data) {
			// A file that takes part of a write(2) (set_ftrace_filter
			// takes one word): the caller's write returns what it
			// took, as the kernel's.
			return uint32(n), 0
		}
	}
	h.pending = hold
	return uint32(len(data)), 0
}

// Flush runs a held-back line (see the package comment); close(2) returns
// its error.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	h.t.fsmu.Lock()
	defer h.t.fsmu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	// close(2) waits for FLUSH, not for RELEASE: an edit of
	// set_ftrace_filter is put in place when the process that opened
	// it closes it, so that what it does next sees the change, as on
	// the kernel. (Every close of a copy of the descriptor flushes
	// too: a child's exit must not put the edit in place early.)
	if c, ok := fuse.FromContext(ctx); ok && c.Pid == h.opener {
		h.f.Commit()
	}
	if len(h.pending) == 0 {
		return 0
	}
	buf := h.pending
	h.pending = nil
	_, err := h.f.Write(buf)
	return errno(err)
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.t.fsmu.Lock()
	defer h.t.fsmu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t.dropEdit(h)
	h.f.Close()
	return 0
}
