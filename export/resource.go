package export

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"golang.org/x/sys/unix"
)

// newResource describes this ktrace process and its host by the
// OpenTelemetry semantic conventions: service.name=ktrace (and its
// version), host.name, host.arch, os.type=linux, os.version (the kernel
// release) and os.description (uname's system, release, version and
// machine), then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, which win
// over all of these.
func newResource(ctx context.Context) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "ktrace"),
		attribute.String("os.type", "linux"),
		attribute.String("host.arch", hostArch()),
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		attrs = append(attrs, attribute.String("service.version", bi.Main.Version))
	}
	if h, err := os.Hostname(); err == nil {
		attrs = append(attrs, attribute.String("host.name", h))
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		rel, ver := unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:])
		attrs = append(attrs,
			attribute.String("os.version", rel),
			attribute.String("os.description", fmt.Sprintf("%s %s %s %s", unix.ByteSliceToString(u.Sysname[:]), rel, ver, unix.ByteSliceToString(u.Machine[:]))))
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attrs...),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	return res, nil
}

// hostArch is host.arch's value for the Go architecture.
func hostArch() string {
	switch runtime.GOARCH {
	case "386":
		return "x86"
	case "arm":
		return "arm32"
	case "ppc64le":
		return "ppc64"
	}
	return runtime.GOARCH
}
