package kernel

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

//go:generate go run ./internal/gen -src ../../shared/kernels/6.12 -out snapshot-6.12.bin

// embeddedBlob is the pinned 6.12 snapshot (Debian 6.12.95+deb12-cloud-amd64,
// booted with nokaslr) without its kernel image, so that ktrace can validate
// probe lines on machines without kprobes and builds never need the
// snapshot directory. In place of the image it carries the text table
// computed from it (see TextTable). The generator imports this package, so
// regenerating after deleting the blob needs an empty placeholder file.
//
//go:embed snapshot-6.12.bin
var embeddedBlob []byte

var (
	embeddedOnce  sync.Once
	embeddedModel *Model
	embeddedErr   error
)

// Embedded returns the model of the 6.12 snapshot compiled into ktrace. It
// is decompressed on the first call and shared afterwards (a Model is
// immutable); its BTF is decompressed only when first asked for. The model
// has no kernel image, so InsnBoundary reports checked=false.
func Embedded() (*Model, error) {
	embeddedOnce.Do(func() {
		a, err := blob.Parse(embeddedBlob)
		if err != nil {
			embeddedErr = fmt.Errorf("embedded kernel model: %w", err)
			return
		}
		embeddedModel, embeddedErr = load(snapshotSource{
			name: "embedded",
			read: a.Read,
			has:  a.Has,
		})
		if embeddedErr == nil {
			embeddedModel.addTextFact()
		}
	})
	return embeddedModel, embeddedErr
}

// Open returns a model by specification:
//
//   - "host": the running system (LoadHost);
//   - "embedded": the snapshot compiled into ktrace (Embedded);
//   - any other non-empty string: a snapshot directory (LoadSnapshot);
//   - "": the running system when it can be probed — the kprobe tracer
//     interface exists under /sys/kernel/tracing or /sys/kernel/debug/tracing
//     and /sys/kernel/btf/vmlinux is readable — otherwise the embedded
//     snapshot.
func Open(spec string) (*Model, error) {
	switch spec {
	case "host":
		return LoadHost()
	case "embedded":
		return Embedded()
	case "":
		if HostProbeable() {
			return LoadHost()
		}
		return Embedded()
	}
	return LoadSnapshot(spec)
}

// HostProbeable reports whether the running system offers the kprobe tracer
// (a kprobe_events file in tracefs) and readable kernel BTF.
func HostProbeable() bool {
	if tracingDir() == "" {
		return false
	}
	f, err := os.Open(hostBTF)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// tracingDir returns the tracefs mount holding kprobe_events, or "".
func tracingDir() string {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(d + "/kprobe_events"); err == nil {
			return d
		} else if !errors.Is(err, os.ErrNotExist) {
			// Present but unreadable (permissions): still the place.
			if _, err := os.Lstat(d + "/kprobe_events"); err == nil {
				return d
			}
		}
	}
	return ""
}
