package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/rlimit"
)

// ErrUnavailable is wrapped by Check when this system cannot run ktrace's
// tracer: a missing privilege or kernel feature, named in the message.
var ErrUnavailable = errors.New("tracing unavailable")

// Linux capability numbers (linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// effectiveCaps returns the CapEff mask of this process.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff in /proc/self/status")
}

// kprobesAvailable reports whether the kernel can create kprobes for
// perf/BPF: the perf_kprobe PMU or a tracefs kprobe_events file.
func kprobesAvailable() bool {
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err == nil {
		return true
	}
	for _, d := range tracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err == nil {
			return true
		}
	}
	return false
}

var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// Check reports, without attaching anything, whether this process can
// trace: the capabilities (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN),
// kprobes in the kernel, BPF_PROG_TYPE_KPROBE programs and BPF ring
// buffers. The error wraps ErrUnavailable and names what is missing.
func Check() error {
	caps, err := effectiveCaps()
	if err == nil {
		has := func(c uint) bool { return caps&(1<<c) != 0 }
		if !has(capSysAdmin) && !(has(capBPF) && has(capPerfmon)) {
			var miss []string
			if !has(capBPF) {
				miss = append(miss, "CAP_BPF")
			}
			if !has(capPerfmon) {
				miss = append(miss, "CAP_PERFMON")
			}
			return fmt.Errorf("%w: missing capability %s (or CAP_SYS_ADMIN); run as root", ErrUnavailable, strings.Join(miss, " and "))
		}
	}
	if !kprobesAvailable() {
		return fmt.Errorf("%w: the kernel has no kprobes (CONFIG_KPROBES / CONFIG_KPROBE_EVENTS not set: no perf_kprobe PMU, no kprobe_events)", ErrUnavailable)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("%w: raising RLIMIT_MEMLOCK: %v", ErrUnavailable, err)
	}
	if err := features.HaveProgramType(ebpf.Kprobe); err != nil {
		return fmt.Errorf("%w: the kernel cannot load BPF_PROG_TYPE_KPROBE programs: %v", ErrUnavailable, err)
	}
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return fmt.Errorf("%w: the kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF, Linux 5.8): %v", ErrUnavailable, err)
	}
	return nil
}

// CleanStale removes tracefs probe events left behind by ktrace
// processes that are gone (groups "<TraceFSPrefix>_<pid>_<random>" whose
// pid no longer runs) from kprobe_events, uprobe_events and
// dynamic_events. dir is the tracefs mount ("" tries the usual places).
// It returns the events removed.
func CleanStale(dir string) ([]string, error) { return removeFromTracefs(dir, staleGroup, 0) }

// staleGroup reports whether a tracefs group was created by a ktrace
// process that no longer exists.
func staleGroup(group string) bool {
	tail, ok := strings.CutPrefix(group, TraceFSPrefix+"_")
	if !ok {
		return false
	}
	pidText, _, ok := strings.Cut(tail, "_")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err != nil && !errors.Is(err, syscall.EPERM)
}
