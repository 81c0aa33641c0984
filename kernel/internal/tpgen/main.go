// Command tpgen packs the tracepoint formats of a kernel snapshot
// directory (DIR/tracepoints: available_events and
// events/SYSTEM/EVENT/format, as tracefs shows them) into the blob that
// package kernel embeds beside the 6.12 snapshot (see Model.Tracepoints).
// It runs from go generate:
//
//	go run ./internal/tpgen -src ../../shared/kernels/6.12 -out tracepoints-6.12.bin
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

func main() {
	src := flag.String("src", "", "snapshot directory")
	out := flag.String("out", "", "blob to write")
	flag.Parse()
	if *src == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: tpgen -src DIR -out FILE")
		os.Exit(2)
	}
	tps, err := kernel.ReadTracepointDir(*src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpgen:", err)
		os.Exit(1)
	}
	b, err := blob.Encode([]blob.Member{{Name: kernel.FileTracepoints, Data: kernel.EncodeTracepoints(tps)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "tpgen:", err)
		os.Exit(1)
	}
	fmt.Printf("tpgen: %d tracepoints, %d bytes\n", len(tps), len(b))
}
