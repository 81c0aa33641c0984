package tracefs

import (
	"embed"
	"fmt"
)

// The kernel texts below were captured from the pinned kernels (cat of the
// files in a booted 6.1.192 and 6.12.95) so that scripts grepping them for
// features see what those kernels print.
//
//go:embed kerneltext
var kernelText embed.FS

// releaseTexts are the static files whose text depends on the release.
type releaseTexts struct {
	name                    string
	readme                  string
	headerEvent, headerPage string
	// histPoll: the hist files answer poll(2) (POLLIN after a hit since
	// the last read, POLLPRI after one since the last poll); without it
	// they are always ready, as a file with no poll method.
	histPoll bool
}

// knownTexts is ordered oldest first.
var knownTexts = []struct {
	major, minor int
	name         string
	histPoll     bool
}{
	{6, 1, "6.1", false},
	{6, 12, "6.12", true},
}

func mustText(name string) string {
	b, err := kernelText.ReadFile("kerneltext/" + name)
	if err != nil {
		// The files are embedded at build time; a missing one is a
		// build defect, not a user input.
		panic(fmt.Sprintf("tracefs: embedded kernel text %s: %v", name, err))
	}
	return string(b)
}

// textsFor picks the nearest known release at or below major.minor (the
// oldest known one below all of them, the newest for 0.0).
func textsFor(major, minor int) *releaseTexts {
	pick := knownTexts[len(knownTexts)-1]
	if major != 0 || minor != 0 {
		pick = knownTexts[0]
		for _, k := range knownTexts {
			if k.major < major || (k.major == major && k.minor <= minor) {
				pick = k
			}
		}
	}
	return &releaseTexts{
		name:        pick.name,
		readme:      mustText("README-" + pick.name),
		headerEvent: mustText("header_event-" + pick.name),
		headerPage:  mustText("header_page-" + pick.name),
		histPoll:    pick.histPoll,
	}
}

// traceHeaderFmt is the head of the trace file; the verbs are the
// current tracer, the entries in the buffer, the entries written since the last
// clear and the CPU count.
const traceHeaderFmt = `# tracer: %s
#
# entries-in-buffer/entries-written: %d/%d   #P:%d
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
`

// groupFilterHead opens events/GROUP/filter; a group filter set by a write
// follows it.
const groupFilterHead = `### global filter ###
# Use this to set filters for multiple events.
# Only events with the given fields will be affected.
# If no events are modified, an error message will be displayed here
`
