package tracer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ProcTree answers whether a process descends from a root process, for
// record --follow. It walks /proc/PID/stat parent links and caches the
// answers. A process that exited before its first record was examined
// cannot be placed and counts as outside the tree, unless it is the root.
type ProcTree struct {
	root  uint32
	mu    sync.Mutex
	known map[uint32]bool
}

// NewProcTree returns the tree rooted at pid.
func NewProcTree(pid int) *ProcTree {
	return &ProcTree{root: uint32(pid), known: map[uint32]bool{uint32(pid): true}}
}

// Contains reports whether process tgid is the root or one of its
// descendants.
func (t *ProcTree) Contains(tgid uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var chain []uint32
	p := tgid
	in := false
	for depth := 0; depth < 64 && p > 1; depth++ {
		if v, ok := t.known[p]; ok {
			in = v
			break
		}
		chain = append(chain, p)
		pp, err := parentOf(p)
		if err != nil {
			break
		}
		p = pp
	}
	for _, c := range chain {
		t.known[c] = in
	}
	return in
}

// parentOf reads the parent pid from /proc/PID/stat ("pid (comm) S ppid").
func parentOf(pid uint32) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	v, err := strconv.ParseUint(f[1], 10, 32)
	return uint32(v), err
}
