package events

import (
	"embed"
	"strings"
	"sync"
)

// The built-in trace events of the pinned kernels ("group:event" per line):
// available_events of each kernel booted without dynamic events, plus the
// ftrace-internal events (events/ftrace), which available_events omits. A
// dynamic event cannot take one of these names: the kernel fails the
// registration with EEXIST and logs EVENT_EXIST.
//
//go:embed static/*.txt
var staticFS embed.FS

var (
	staticOnce sync.Once
	staticSets map[string]map[string]bool
)

// isStaticEvent reports whether group/name is a built-in event of the
// kernel of dialect name ("6.1", "6.12").
func isStaticEvent(dialect, group, name string) bool {
	staticOnce.Do(func() {
		staticSets = map[string]map[string]bool{}
		ents, err := staticFS.ReadDir("static")
		if err != nil {
			return
		}
		for _, e := range ents {
			b, err := staticFS.ReadFile("static/" + e.Name())
			if err != nil {
				continue
			}
			set := map[string]bool{}
			for _, l := range strings.Split(string(b), "\n") {
				if l != "" {
					set[l] = true
				}
			}
			staticSets[strings.TrimSuffix(e.Name(), ".txt")] = set
		}
	})
	return staticSets[dialect][group+":"+name]
}
