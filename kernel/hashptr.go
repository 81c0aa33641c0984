package kernel

import (
	"os"
	"strings"
)

// hostCmdline is the running kernel's command line.
const hostCmdline = "/proc/cmdline"

// PointersUnhashed reports whether the running kernel prints bare %p
// pointers as addresses: it was booted with no_hash_pointers, so the
// trace shows the same text for a %p field whether the hash-ptr option
// is set or not. A model of a snapshot says false: the trace of a
// kernel that hashes pointers prints values keyed by a secret of that
// boot, which no one else can reproduce.
func (m *Model) PointersUnhashed() bool { return m.noHashPointers }

// readCmdline learns from /proc/cmdline whether the running kernel hashes
// the pointers it prints.
func (m *Model) readCmdline() {
	b, err := os.ReadFile(hostCmdline)
	if err != nil {
		m.addFact("pointer hashing", "assumed on", hostCmdline+": "+err.Error())
		return
	}
	if noHashPointers(string(b)) {
		m.noHashPointers = true
		m.addFact("pointer hashing", "off", hostCmdline+": hashing turned off (%p prints the address)")
		return
	}
	m.addFact("pointer hashing", "on", hostCmdline+" (%p prints a hashed value unless the hash-ptr option is cleared)")
}

// noHashPointers reports whether a kernel command line turns pointer
// hashing off: no_hash_pointers, or hash_pointers=never, its newer
// spelling (a longer name is another parameter).
func noHashPointers(cmdline string) bool {
	for _, w := range strings.Fields(cmdline) {
		if w == "no_hash_pointers" || w == "hash_pointers=never" {
			return true
		}
	}
	return false
}
