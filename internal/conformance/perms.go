package conformance

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The permission goldens: testdata/perms/ls-KERNEL.txt, the output of
// testdata/perms/capture.sh in each pinned kernel: `ls -lan` (dates
// dropped) of every tracefs directory ktrace emulates, once as mounted
// without options and once after uid=1000,gid=1000,mode=0750.

// PermTracefs is the tracefs path the goldens list.
const PermTracefs = "/sys/kernel/tracing"

// PermEntry is one line of an `ls -lan` listing.
type PermEntry struct {
	Mode     string // "drwx------", "-rw-r-----"
	Nlink    int
	UID, GID uint32
	Size     int64
	Name     string
}

// PermListing is the golden of one set of mount options: directory (path
// relative to the tracefs root, "" for the root) -> entry name -> entry.
type PermListing map[string]map[string]PermEntry

// PermGolden is a kernel's golden: mount options ("none",
// "uid=1000,gid=1000,mode=0750") -> listing.
type PermGolden map[string]PermListing

// LoadPermGolden reads testdata/perms/ls-KERNEL.txt under the module root.
func LoadPermGolden(root, kernel string) (PermGolden, error) {
	p := filepath.Join(root, "testdata", "perms", "ls-"+kernel+".txt")
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("permission golden: %w", err)
	}
	defer f.Close()
	g := PermGolden{}
	var cur PermListing
	var dir map[string]PermEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "### options: "):
			cur = PermListing{}
			g[strings.TrimPrefix(l, "### options: ")] = cur
			dir = nil
		case strings.HasPrefix(l, "== "):
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: listing before an options line", p, n)
			}
			d := strings.TrimPrefix(strings.TrimPrefix(l, "== "), PermTracefs)
			dir = map[string]PermEntry{}
			cur[strings.TrimPrefix(d, "/")] = dir
		case strings.HasPrefix(l, "total "), dir == nil:
			// "total 0", and the /proc/mounts line after the options.
		default:
			e, err := parsePermEntry(l)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", p, n, err)
			}
			dir[e.Name] = e
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("permission golden %s: %w", p, err)
	}
	return g, nil
}

// parsePermEntry parses "MODE NLINK UID GID SIZE NAME".
func parsePermEntry(l string) (PermEntry, error) {
	f := strings.Fields(l)
	if len(f) != 6 {
		return PermEntry{}, fmt.Errorf("not an ls -lan line: %q", l)
	}
	var nums [4]uint64
	for i := range nums {
		v, err := strconv.ParseUint(f[i+1], 10, 32)
		if err != nil {
			return PermEntry{}, fmt.Errorf("ls -lan line %q: %w", l, err)
		}
		nums[i] = v
	}
	return PermEntry{Mode: f[0], Nlink: int(nums[0]), UID: uint32(nums[1]), GID: uint32(nums[2]), Size: int64(nums[3]), Name: f[5]}, nil
}

// LsMode formats the type and permission bits of a Unix st_mode as ls -l
// does ("drwxr-x---", set-id and sticky bits as s/S and t/T).
func LsMode(m uint32) string {
	b := []byte("----------")
	switch m & 0o170000 {
	case 0o040000:
		b[0] = 'd'
	case 0o120000:
		b[0] = 'l'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	special := func(bit uint32, pos int, set, unset byte) {
		if m&bit == 0 {
			return
		}
		if b[pos] == 'x' {
			b[pos] = set
		} else {
			b[pos] = unset
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b)
}
