package cpuprofile

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// Start writes a CPU profile to path when it is set and returns the
// function that ends it. A profile that cannot start is reported on warn
// (naming KTRACE_CPUPROFILE) and does not stop ktrace.
func Start(path string, warn io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(warn, "ktrace: KTRACE_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(warn, "ktrace: KTRACE_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
