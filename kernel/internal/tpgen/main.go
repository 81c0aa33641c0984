// Command tpgen packs the tracepoint formats of a kernel snapshot
// directory (DIR/tracepoints: available_events and
// events/SYSTEM/EVENT/format, as tracefs shows them), and the formats of
// the tracer's own events (events/ftrace/), into the blob that
// package kernel embeds beside the 6.12 snapshot (see Model.Tracepoints).
// It runs from go generate:
//
//	go run ./internal/tpgen -src ../../shared/kernels/6.12 -out tracepoints-6.12.bin
package main

import (
	"fmt"
	"path/filepath"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

func main() { blob.Main("tpgen", pack) }

// pack reads the tracepoint formats of src into the one blob member.
func pack(src string) ([]blob.Member, error) {
	tps, err := kernel.ReadTracepointDir(src)
	if err != nil {
		return nil, err
	}
	ft, err := kernel.ReadFtraceEvents(filepath.Join(src, kernel.FileTracepoints, "events"))
	if err != nil {
		return nil, err
	}
	fmt.Printf("tpgen: %d tracepoints, %d ftrace events\n", len(tps), len(ft))
	return []blob.Member{
		{Name: kernel.FileTracepoints, Data: kernel.EncodeTracepoints(tps)},
		{Name: kernel.FileFtraceEvents, Data: kernel.EncodeTracepoints(ft)},
	}, nil
}
