package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// cpio mode bits (the file-type part of st_mode) used in newc headers.
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// cpioEntry is one member of an initramfs archive.
type cpioEntry struct {
	name  string // path inside the archive, without a leading slash
	mode  uint32 // full st_mode (type bits | permission bits)
	data  []byte // file contents, or the link target for symlinks
	major uint32 // device numbers for device nodes (rdev)
	minor uint32
}

// cpioWriter writes the "newc" (SVR4, no checksum) cpio format the Linux
// kernel unpacks as an initramfs. Only what an initramfs needs is supported:
// directories, regular files, symlinks and character devices.
type cpioWriter struct {
	w   *bufio.Writer
	n   int64 // bytes written so far, for 4-byte alignment
	ino uint32
	err error
}

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriter(w), ino: 1}
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// add appends one member. Names are stored as given; the kernel creates
// members in archive order, so parents must come before their children.
func (c *cpioWriter) add(e cpioEntry) error {
	if c.err != nil {
		return c.err
	}
	nlink := 1
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, e.major, e.minor, len(e.name)+1, 0)
	c.ino++
	c.write([]byte(hdr))
	c.write([]byte(e.name))
	c.write([]byte{0})
	c.pad()
	c.write(e.data)
	c.pad()
	if c.err != nil {
		return fmt.Errorf("cpio: writing %s: %w", e.name, c.err)
	}
	return nil
}

// close writes the trailer member and flushes.
func (c *cpioWriter) close() error {
	if err := c.add(cpioEntry{name: "TRAILER!!!"}); err != nil {
		return err
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("cpio: flush: %w", err)
	}
	return nil
}

// tree collects archive members by path and writes them with every parent
// directory created first, in a deterministic order.
type tree struct {
	entries map[string]cpioEntry
}

func newTree() *tree { return &tree{entries: map[string]cpioEntry{}} }

// clean turns a guest path ("/bin/sh", "bin/sh") into an archive name
// ("bin/sh"). It rejects paths that escape the root.
func clean(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("invalid guest path %q", p)
	}
	return c[1:], nil
}

func (t *tree) dir(p string) error {
	name, err := clean(p)
	if err != nil {
		return err
	}
	t.entries[name] = cpioEntry{name: name, mode: modeDir | 0o755}
	return nil
}

func (t *tree) file(p string, data []byte, perm fs.FileMode) error {
	name, err := clean(p)
	if err != nil {
		return err
	}
	t.entries[name] = cpioEntry{name: name, mode: modeRegular | uint32(perm.Perm()), data: data}
	return nil
}

func (t *tree) symlink(p, target string) error {
	name, err := clean(p)
	if err != nil {
		return err
	}
	t.entries[name] = cpioEntry{name: name, mode: modeSymlink | 0o777, data: []byte(target)}
	return nil
}

func (t *tree) charDev(p string, major, minor uint32) error {
	name, err := clean(p)
	if err != nil {
		return err
	}
	t.entries[name] = cpioEntry{name: name, mode: modeCharDev | 0o600, major: major, minor: minor}
	return nil
}

// writeTo writes the archive: missing parent directories are added, and
// members are sorted by path so that parents precede children.
func (t *tree) writeTo(w io.Writer) error {
	for name := range t.entries {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := t.entries[d]; !ok {
				t.entries[d] = cpioEntry{name: d, mode: modeDir | 0o755}
			}
		}
	}
	names := make([]string, 0, len(t.entries))
	for name := range t.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	c := newCpioWriter(w)
	for _, name := range names {
		if err := c.add(t.entries[name]); err != nil {
			return err
		}
	}
	return c.close()
}
