package fusefs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/ktrace-dev/ktrace/tracefs"
)

// The FUSE device proxy.
//
// poll(2) on a FUSE file becomes a FUSE_POLL request, and a server that
// answers it may later wake the poller with a FUSE_NOTIFY_POLL message.
// go-fuse answers FUSE_POLL with ENOSYS, after which the kernel treats
// every file of the mount as always ready (it stops asking). trace_pipe
// and the hist files are not: a poller of trace_pipe waits for an entry,
// and one of a hist file waits for a hit (the kernel's trigger-hist-poll
// selftest checks both). So ktrace holds the mount's /dev/fuse descriptor
// itself: it answers FUSE_POLL and sends the wake-ups, and passes every
// other message on, both ways, through a SOCK_SEQPACKET socket pair whose
// other end go-fuse serves as its device (go-fuse's "/dev/fd/N" mount).
// A SEQPACKET socket keeps message boundaries, as the device does: one
// read is one request, one write one reply.

// FUSE protocol numbers (include/uapi/linux/fuse.h).
const (
	fuseOpPoll              = 40
	fuseNotifyPoll          = 1
	fusePollScheduleNotify  = 1
	fuseInHeaderLen         = 40
	fuseOutHeaderLen        = 16
	fusePollInLen           = 24
	fusePollOutLen          = 8
	fuseNotifyPollWakeupLen = 8
)

// pollCheck is how often a waiting poller's file is checked for readiness.
// The kernel wakes a poller at once; this is the delay ktrace adds.
const pollCheck = 10 * time.Millisecond

// proxyBufSize holds the largest message either way: a write request of
// MaxWrite bytes (max_write) or a read reply of MaxWrite bytes (max_read)
// with their headers.
const proxyBufSize = MaxWrite + 64<<10

// devProxy sits between /dev/fuse and go-fuse.
type devProxy struct {
	dev   int          // the mount's /dev/fuse descriptor
	sock  int          // ktrace's end of the socket pair
	files *streamGuard // the open files by FUSE file handle
	// noPoll answers every FUSE_POLL with ENOSYS, as go-fuse does, for a
	// server that reads its own mount (Options.SelfAccess): the Go
	// runtime's poller would otherwise send it poll requests it may not
	// be able to serve.
	noPoll bool

	mu      sync.Mutex
	waiters map[uint64]pollWaiter // by the kernel's poll handle (kh)
	kick    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// pollWaiter is a poller the kernel asked to be woken
// (FUSE_POLL_SCHEDULE_NOTIFY) that was not ready.
type pollWaiter struct {
	fh     uint64
	events uint32
	h      *handle
}

// mountDevice opens /dev/fuse and mounts it on dir with the options
// go-fuse's direct mount gives, returning the device descriptor. It needs
// CAP_SYS_ADMIN; without it the caller mounts through go-fuse (fusermount).
func mountDevice(dir string, o *fuse.MountOptions) (int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return -1, err
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	opts := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&syscall.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", o.MaxWrite),
	}
	opts = append(opts, o.Options...)
	if o.AllowOther {
		opts = append(opts, "allow_other")
	}
	src := o.FsName
	if src == "" {
		src = o.Name
	}
	if err := syscall.Mount(src, dir, "fuse."+o.Name, syscall.MS_NOSUID|syscall.MS_NODEV, strings.Join(opts, ",")); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// startProxy starts the proxy on a mounted device and returns the
// descriptor go-fuse is to serve.
func startProxy(dev int, files *streamGuard, noPoll bool) (*devProxy, int, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, -1, fmt.Errorf("socketpair: %w", err)
	}
	for _, fd := range pair {
		// A message must fit the socket's buffer whole.
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4*proxyBufSize)
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4*proxyBufSize)
	}
	p := &devProxy{dev: dev, sock: pair[0], files: files, noPoll: noPoll,
		waiters: map[uint64]pollWaiter{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	files.proxy = p
	quietEOF()
	go p.requests()
	go p.replies()
	go p.watch()
	return p, pair[1], nil
}

// requests passes the kernel's requests on to go-fuse and answers
// FUSE_POLL. It ends when the connection does (ENODEV: unmounted or
// aborted).
func (p *devProxy) requests() {
	buf := make([]byte, proxyBufSize)
	for {
		n, err := syscall.Read(p.dev, buf)
		switch err {
		case nil:
		case syscall.EINTR, syscall.EAGAIN, syscall.ENOENT:
			// ENOENT: the request was interrupted before it was read.
			continue
		default:
			p.stop()
			return
		}
		if n >= fuseInHeaderLen && binary.LittleEndian.Uint32(buf[4:]) == fuseOpPoll {
			req := append([]byte(nil), buf[:n]...)
			// Poll may wait for the backend (trace_pipe): the other
			// requests must not.
			go p.poll(req)
			continue
		}
		if _, err := syscall.Write(p.sock, buf[:n]); err != nil {
			p.stop()
			return
		}
	}
}

// replies passes go-fuse's replies on to the kernel. It ends when go-fuse
// closes its end; it then releases both descriptors.
func (p *devProxy) replies() {
	defer func() {
		syscall.Close(p.sock)
		syscall.Close(p.dev)
	}()
	buf := make([]byte, proxyBufSize)
	for {
		n, err := syscall.Read(p.sock, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			p.stop()
			return
		}
		if n < fuseOutHeaderLen {
			continue
		}
		// ENOENT: the request was interrupted and its reply is not
		// wanted any more; ENODEV: the connection ended, which the
		// request side sees too.
		p.writeDev(buf[:n])
	}
}

// stop ends the proxy: go-fuse's reads of its end then find end of file,
// which ends its serving loops. Its writes still go through (the replies
// of requests it was serving, which the device refuses now, as it would
// have refused them itself), until it closes its end.
func (p *devProxy) stop() {
	p.once.Do(func() {
		close(p.done)
		syscall.Shutdown(p.sock, syscall.SHUT_WR)
	})
}

func (p *devProxy) writeDev(b []byte) error {
	for {
		_, err := syscall.Write(p.dev, b)
		if err != syscall.EINTR {
			return err
		}
	}
}

// poll answers one FUSE_POLL request.
func (p *devProxy) poll(req []byte) {
	unique := binary.LittleEndian.Uint64(req[8:])
	if p.noPoll || len(req) < fuseInHeaderLen+fusePollInLen {
		p.reply(unique, -int32(syscall.ENOSYS), nil)
		return
	}
	in := req[fuseInHeaderLen:]
	fh := binary.LittleEndian.Uint64(in[0:])
	kh := binary.LittleEndian.Uint64(in[8:])
	flags := binary.LittleEndian.Uint32(in[16:])
	events := binary.LittleEndian.Uint32(in[20:])
	if events == 0 {
		// A kernel older than FUSE 7.21 does not say what it waits for.
		events = ^uint32(0)
	}
	revents := uint32(tracefs.DefaultPollMask)
	h := p.files.file(fh)
	if h != nil {
		revents = h.poll()
	}
	if revents&events == 0 && flags&fusePollScheduleNotify != 0 && h != nil {
		// Registered before the reply: a wake-up that comes first
		// finds the poller already waiting, and it polls again.
		p.mu.Lock()
		p.waiters[kh] = pollWaiter{fh: fh, events: events, h: h}
		p.mu.Unlock()
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	out := make([]byte, fusePollOutLen)
	binary.LittleEndian.PutUint32(out, revents)
	p.reply(unique, 0, out)
}

// reply writes a reply to request unique: errno (negative) or the data.
func (p *devProxy) reply(unique uint64, errno int32, data []byte) {
	b := make([]byte, fuseOutHeaderLen+len(data))
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(errno))
	binary.LittleEndian.PutUint64(b[8:], unique)
	copy(b[fuseOutHeaderLen:], data)
	p.writeDev(b)
}

// wake sends the kernel FUSE_NOTIFY_POLL for poll handle kh: its poller
// polls the file again.
func (p *devProxy) wake(kh uint64) {
	b := make([]byte, fuseOutHeaderLen+fuseNotifyPollWakeupLen)
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], fuseNotifyPoll)
	binary.LittleEndian.PutUint64(b[fuseOutHeaderLen:], kh)
	p.writeDev(b)
}

// forget drops the waiters of a released file handle.
func (p *devProxy) forget(fh uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for kh, w := range p.waiters {
		if w.fh == fh {
			delete(p.waiters, kh)
		}
	}
}

// watch checks the waiters' files every pollCheck while there are any,
// and wakes each whose file became ready.
func (p *devProxy) watch() {
	t := time.NewTicker(pollCheck)
	defer t.Stop()
	for {
		p.mu.Lock()
		idle := len(p.waiters) == 0
		p.mu.Unlock()
		if idle {
			select {
			case <-p.done:
				return
			case <-p.kick:
			}
		}
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		p.mu.Lock()
		ws := make(map[uint64]pollWaiter, len(p.waiters))
		for kh, w := range p.waiters {
			ws[kh] = w
		}
		p.mu.Unlock()
		for kh, w := range ws {
			if !w.h.pollReady(w.events) {
				continue
			}
			p.mu.Lock()
			_, still := p.waiters[kh]
			delete(p.waiters, kh)
			p.mu.Unlock()
			if still {
				p.wake(kh)
			}
		}
	}
}

var quietOnce sync.Once

// quietEOF keeps go-fuse from logging the end of the proxy's socket as a
// defect: go-fuse reads its device until ENODEV, which a socket cannot
// give, so when the proxy stops each of its readers finds end of file and
// logs "Short read for input header: []" through the standard logger.
// That one line is dropped; everything else the standard logger writes
// goes where it went before.
func quietEOF() {
	quietOnce.Do(func() {
		log.SetOutput(&dropLines{w: log.Writer(), drop: []byte("Short read for input header: []")})
	})
}

// dropLines writes what it is given to w, except writes that contain
// drop.
type dropLines struct {
	w    io.Writer
	drop []byte
}

func (d *dropLines) Write(b []byte) (int, error) {
	if bytes.Contains(b, d.drop) {
		return len(b), nil
	}
	return d.w.Write(b)
}
