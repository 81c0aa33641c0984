package fusefs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// streamGuard fails the page-cache reads of trace_pipe.
//
// sendfile(2) and splice(2) read a FUSE file through the page cache even
// when it is open with FOPEN_DIRECT_IO, and stop at the inode size; busybox
// cat tries sendfile first. A waiting, consuming stream cannot be served
// that way: a page read would take entries into the cache, and the short
// read shrinks the inode size so the next call finds end of file. So
// trace_pipe has a non-zero size (sendfile must ask, not stop at once) and
// its page-cache reads fail; sendfile then fails with EIO and its callers
// (busybox, Python's shutil) fall back to read(2), which is served
// directly. The FUSE client tags every direct read with the reader's lock
// owner (FUSE_READ_LOCKOWNER) and no page-cache read, which is how the two
// are told apart; the stream handles are the ones opened with FOPEN_STREAM.
//
// It also keeps the open tracefs files by FUSE file handle, which the
// device proxy's poll answers need (the kernel's FUSE_POLL names the file
// by its handle, which go-fuse assigns and keeps to itself): the node's
// Open files its handle under the request's cancel channel, the wrapper's
// Open takes it from there once go-fuse has numbered it.
type streamGuard struct {
	fuse.RawFileSystem

	mu      sync.Mutex
	streams map[uint64]bool // open file handles of streams
	// opening holds the handles of Open and Create requests under way,
	// by the request's cancel channel; files the open files by FUSE file
	// handle.
	opening map[<-chan struct{}]*handle
	files   map[uint64]*handle
	// proxy, when the mount has one, forgets a released handle's
	// pollers.
	proxy *devProxy
}

func newStreamGuard(fs fuse.RawFileSystem) *streamGuard {
	return &streamGuard{RawFileSystem: fs, streams: map[uint64]bool{},
		opening: map[<-chan struct{}]*handle{}, files: map[uint64]*handle{}}
}

// opened files the handle an Open or Create request (cancel) made.
func (g *streamGuard) opened(cancel <-chan struct{}, f *handle) {
	if cancel == nil {
		return
	}
	g.mu.Lock()
	g.opening[cancel] = f
	g.mu.Unlock()
}

func (g *streamGuard) note(cancel <-chan struct{}, ok bool, fh uint64, openFlags uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.opening[cancel]
	delete(g.opening, cancel)
	if !ok {
		return
	}
	if f != nil {
		g.files[fh] = f
	}
	if openFlags&fuse.FOPEN_STREAM != 0 {
		g.streams[fh] = true
	}
}

// file is the file open under FUSE file handle fh, nil if none.
func (g *streamGuard) file(fh uint64) *handle {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.files[fh]
}

func (g *streamGuard) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := g.RawFileSystem.Open(cancel, in, out)
	g.note(cancel, st.Ok(), out.Fh, out.OpenFlags)
	return st
}

func (g *streamGuard) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	st := g.RawFileSystem.Create(cancel, in, name, out)
	g.note(cancel, st.Ok(), out.Fh, out.OpenFlags)
	return st
}

func (g *streamGuard) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if in.ReadFlags&fuse.READ_LOCKOWNER == 0 {
		g.mu.Lock()
		stream := g.streams[in.Fh]
		g.mu.Unlock()
		if stream {
			return nil, fuse.EINVAL
		}
	}
	return g.RawFileSystem.Read(cancel, in, buf)
}

func (g *streamGuard) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	g.RawFileSystem.Release(cancel, in)
	g.mu.Lock()
	delete(g.streams, in.Fh)
	delete(g.files, in.Fh)
	p := g.proxy
	g.mu.Unlock()
	if p != nil {
		p.forget(in.Fh)
	}
}
