package kernel

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Paths of the running system's introspection files.
const (
	hostVersion   = "/proc/version"
	hostKallsyms  = "/proc/kallsyms"
	hostBTF       = "/sys/kernel/btf/vmlinux"
	hostBlacklist = "/sys/kernel/debug/kprobes/blacklist"
	hostConfigGz  = "/proc/config.gz"
	hostPossible  = "/sys/devices/system/cpu/possible"
)

// ErrHiddenAddresses is returned when /proc/kallsyms or the kprobe blacklist
// show only zero addresses: the kernel hides them from unprivileged readers
// (kernel.kptr_restrict), so the model would be useless.
var ErrHiddenAddresses = errors.New("kernel addresses are hidden (all zero): run as root or lower kernel.kptr_restrict")

// LoadHost builds a model of the running kernel from /proc/version,
// /proc/kallsyms, the kprobe blacklist in debugfs, tracefs
// available_filter_functions, /proc/config.gz (or /boot/config-RELEASE),
// the possible-CPU list and, lazily, /sys/kernel/btf/vmlinux and
// /boot/vmlinuz-RELEASE. It needs root (or CAP_SYSLOG with kptr_restrict
// relaxed) and mounted tracefs and debugfs; errors name the missing file.
//
// KASLR is handled by aligning the image with kallsyms (_stext). Checked in
// the pinned 6.1 and 6.12 kernels booted with KASLR (2026-11-29): for 240
// kprobe and kretprobe places at offsets 0-47 of five functions each, the
// host model's CheckProbeAddress gave the errno the kernel returned.
func LoadHost() (*Model, error) {
	files, err := hostFiles()
	if err != nil {
		return nil, err
	}
	m, err := load(snapshotSource{
		name:          "host",
		read:          files.read,
		has:           files.has,
		where:         files.where,
		cachedSymbols: files.cachedSymbols,
		keepSymbols:   files.keepSymbols,
		cachedSet:     files.cachedSet,
		keepSet:       files.keepSet,
	})
	if err != nil {
		return nil, err
	}
	if m.imageOpen == nil {
		m.liveOpen = OpenLiveText
	}
	m.ftraceDir = files.tracing
	m.addTextFact()
	m.readCmdline()
	return m, nil
}

// hostSource maps snapshot member names to the running system's files.
type hostSource struct {
	release string
	tracing string
	// boot keys the per-boot caches (read once: boot id and modules).
	boot bootKey
	// kallsymsFrom says where kallsyms was read from (the kernel, or
	// ktrace's cache of it for this boot).
	kallsymsFrom string
	filterFrom   string
}

func hostFiles() (*hostSource, error) {
	v, err := os.ReadFile(hostVersion)
	if err != nil {
		return nil, fmt.Errorf("host kernel: %w", err)
	}
	release, _, _, _, err := parseVersion(string(v))
	if err != nil {
		return nil, fmt.Errorf("host kernel: %s: %w", hostVersion, err)
	}
	return &hostSource{release: release, tracing: tracingDir(), boot: newBootKey(release)}, nil
}

// cachedSymbols loads the model's symbols from this boot's symbol index
// cache (symcache.go), when there is a valid one.
func (h *hostSource) cachedSymbols(m *Model) (string, bool) {
	path, key, ok := symbolIndexFor(h.boot)
	if !ok || m.loadSymbolIndex(path, key) != nil {
		return "", false
	}
	return hostKallsyms + " (as indexed for this boot in " + path + ")", true
}

// keepSymbols writes the symbol index cache of the symbols just parsed.
func (h *hostSource) keepSymbols(m *Model) {
	if path, key, ok := symbolIndexFor(h.boot); ok {
		m.writeSymbolIndex(path, key)
	}
}

// cachedSet loads the set of a list file from this boot's set index
// cache (setcache.go), when there is a valid one.
func (h *hostSource) cachedSet(file string) (hashSet, string, bool) {
	path, key, ok := setIndexFor(file, h.boot)
	if !ok {
		return hashSet{}, "", false
	}
	s, err := loadSetIndex(path, key)
	if err != nil {
		return hashSet{}, "", false
	}
	return s, h.where(file) + " (as indexed for this boot in " + path + ")", true
}

// keepSet writes the set index cache of a list file just parsed.
func (h *hostSource) keepSet(file string, s hashSet) {
	if path, key, ok := setIndexFor(file, h.boot); ok {
		writeSetIndex(path, key, s)
	}
}

func (h *hostSource) has(name string) bool {
	switch name {
	case FileTextTable:
		return false
	case FileConfig:
		for _, p := range []string{hostConfigGz, "/boot/config-" + h.release} {
			if _, err := os.Stat(p); err == nil {
				return true
			}
		}
		return false
	case FileBlacklist:
		_, err := os.Stat(hostBlacklist)
		return err == nil
	case FileFilter:
		if h.tracing == "" {
			return false
		}
		_, err := os.Stat(filepath.Join(h.tracing, "available_filter_functions"))
		return err == nil
	case FileBTF:
		_, err := os.Stat(hostBTF)
		return err == nil
	case FileImage:
		_, err := os.Stat(h.imagePath())
		return err == nil
	}
	return true
}

// where names the host file a snapshot member comes from.
func (h *hostSource) where(name string) string {
	switch name {
	case FileVersion:
		return hostVersion
	case FileCPUs:
		return hostPossible
	case FileConfig:
		if _, err := os.Stat(hostConfigGz); err == nil {
			return hostConfigGz
		}
		return hostConfigGz + " or /boot/config-" + h.release
	case FileKallsyms:
		if h.kallsymsFrom != "" {
			return h.kallsymsFrom
		}
		return hostKallsyms
	case FileBlacklist:
		return hostBlacklist + ", debugfs"
	case FileFilter:
		if h.tracing == "" {
			return "tracefs (not mounted)"
		}
		if h.filterFrom != "" {
			return h.filterFrom
		}
		return filepath.Join(h.tracing, "available_filter_functions")
	case FileBTF:
		return hostBTF
	case FileImage:
		return h.imagePath()
	}
	return ""
}

func (h *hostSource) imagePath() string { return "/boot/vmlinuz-" + h.release }

// read returns the content of snapshot member name taken from the running
// system.
func (h *hostSource) read(name string) ([]byte, error) {
	switch name {
	case FileVersion:
		return readHostFile(hostVersion, "")
	case FileCPUs:
		return []byte(strconv.Itoa(possibleCPUs()) + "\n"), nil
	case FileConfig:
		return readHostConfig(h.release)
	case FileKallsyms:
		b, from, err := readHostKallsyms(h.boot)
		if err != nil {
			return nil, err
		}
		h.kallsymsFrom = from
		return b, nil
	case FileBlacklist:
		// Like kallsyms, the kernel formats every range as the file is
		// read; the list changes only with the loaded modules.
		hidden := func(b []byte) bool { return zeroAddresses(b, true) }
		b, _, err := readCachedHostFile(hostBlacklist, "kprobes-blacklist", "debugfs must be mounted on /sys/kernel/debug and readable (root)", h.boot, nil, hidden)
		if err != nil {
			return nil, err
		}
		if hidden(b) {
			return nil, fmt.Errorf("%s: %w", hostBlacklist, ErrHiddenAddresses)
		}
		return b, nil
	case FileFilter:
		if h.tracing == "" {
			return nil, fmt.Errorf("available_filter_functions: no tracefs with kprobe_events under /sys/kernel/tracing or /sys/kernel/debug/tracing: %w", fs.ErrNotExist)
		}
		b, from, err := readCachedHostFile(filepath.Join(h.tracing, "available_filter_functions"), "available_filter_functions", "tracefs needs root", h.boot, nil, nil)
		if err != nil {
			return nil, err
		}
		h.filterFrom = from
		return b, nil
	case FileBTF:
		return readHostFile(hostBTF, "the kernel needs CONFIG_DEBUG_INFO_BTF")
	case FileImage:
		return readHostFile(h.imagePath(), "")
	}
	return nil, fmt.Errorf("host kernel: unknown snapshot file %q: %w", name, fs.ErrNotExist)
}

// readHostFile reads path, adding hint to permission and existence errors.
func readHostFile(path, hint string) ([]byte, error) {
	b, err := readProcFile(path)
	if err != nil {
		if hint != "" && (errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist)) {
			return nil, fmt.Errorf("host kernel: %w (%s)", err, hint)
		}
		return nil, fmt.Errorf("host kernel: %w", err)
	}
	return b, nil
}

// readProcFile reads a whole file of /proc, /sys or tracefs. These show
// size 0, so os.ReadFile starts from 512 bytes and doubles: for a 7 MB
// kallsyms that is a dozen copies and as many zeroed buffers, which on a
// slow machine were most of ktrace's start-up. The file is read instead
// into an anonymous mapping reserved large enough for any such file: the
// kernel hands out zeroed pages as they are first written, nothing is
// copied, and the mapping is never unmapped (the model keeps strings that
// point into it, see parseKallsyms).
func readProcFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const reserve = 1 << 30
	buf, err := unix.Mmap(-1, 0, reserve, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return io.ReadAll(f)
	}
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:min(len(buf), n+1<<20)])
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			break
		}
		if err != nil {
			unix.Munmap(buf)
			return nil, err
		}
	}
	if n == len(buf) {
		unix.Munmap(buf)
		return nil, fmt.Errorf("%s: larger than %d bytes", path, reserve)
	}
	// Give back the untouched part of the reservation.
	if keep := (n + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1); keep < len(buf) {
		unix.Munmap(buf[keep:])
	}
	return buf[:n:n], nil
}

// readHostConfig returns the running kernel's .config from /proc/config.gz,
// else /boot/config-RELEASE.
func readHostConfig(release string) ([]byte, error) {
	f, err := os.Open(hostConfigGz)
	if err == nil {
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("host kernel: %s: %w", hostConfigGz, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("host kernel: %s: %w", hostConfigGz, err)
		}
		return b, nil
	}
	boot := "/boot/config-" + release
	b, err2 := os.ReadFile(boot)
	if err2 != nil {
		return nil, fmt.Errorf("host kernel: no build configuration: %s: %v; %s: %w", hostConfigGz, err, boot, err2)
	}
	return b, nil
}

// possibleCPUs counts /sys/devices/system/cpu/possible ("0-3,8"), the
// num_possible_cpus() the kernel sizes kretprobe instances with; it falls
// back to the CPUs the Go runtime sees.
func possibleCPUs() int {
	b, err := os.ReadFile(hostPossible)
	if err != nil {
		return runtime.NumCPU()
	}
	if n, ok := countCPUList(strings.TrimSpace(string(b))); ok {
		return n
	}
	return runtime.NumCPU()
}

// countCPUList counts the CPUs of a kernel cpulist such as "0-3,8".
func countCPUList(s string) (int, bool) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, false
			}
		}
		n += b - a + 1
	}
	return n, n > 0
}

// zeroAddresses reports whether every address in a kallsyms (hex first
// field) or blacklist ("0x..-0x.." first field) listing is zero.
func zeroAddresses(b []byte, blacklist bool) bool {
	seen := false
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		if len(line) == 0 {
			continue
		}
		field := line
		if i := bytes.IndexAny(line, " \t"); i >= 0 {
			field = line[:i]
		}
		if blacklist {
			field = bytes.ReplaceAll(bytes.ReplaceAll(field, []byte("0x"), nil), []byte("-"), nil)
		}
		if len(bytes.Trim(field, "0")) != 0 {
			return false
		}
		seen = true
	}
	return seen
}

// Capture writes a snapshot of the running system into dir (created if
// needed) in the LoadSnapshot format: kallsyms, btf, kprobes_blacklist,
// available_filter_functions, version and cpus, plus config when the system
// shows one (/proc/config.gz, /boot/config-RELEASE) and vmlinuz when
// /boot/vmlinuz-RELEASE is readable. Where tracefs shows them, the
// tracepoints go into tracepoints/ (available_events, and the format of
// each event it lists and of the tracer's own events/ftrace/), as
// ../shared/kernels holds them. BTF, config and the image are
// optional; every other file is required and a failure names it, leaving
// dir untouched.
//
// Run inside the pinned 6.1 and 6.12 kernels (a static binary in the
// tools/vmsh guest, the config placed in /boot, 2026-11-29), Capture wrote
// files byte-identical to ../shared/kernels/{6.1,6.12}, and LoadHost and
// HostProbeable succeeded there.
func Capture(dir string) error {
	h, err := hostFiles()
	if err != nil {
		return err
	}
	// Read everything first so that a missing file leaves no partial
	// snapshot behind.
	names := []string{FileVersion, FileCPUs, FileConfig, FileKallsyms, FileBlacklist, FileFilter, FileBTF, FileImage}
	contents := make(map[string][]byte, len(names))
	for _, name := range names {
		optional := name == FileBTF || name == FileImage || name == FileConfig
		if optional && !h.has(name) {
			continue
		}
		b, err := h.read(name)
		if err != nil {
			if optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
				continue
			}
			return fmt.Errorf("capture %s: %w", name, err)
		}
		contents[name] = b
	}
	tps, err := captureTracepoints()
	if err != nil {
		return fmt.Errorf("capture %s: %w", FileTracepoints, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	for rel, b := range tps {
		p := filepath.Join(dir, FileTracepoints, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
	}
	for _, name := range names {
		b, ok := contents[name]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
	}
	// Make sure what was written loads.
	if _, err := LoadSnapshot(dir); err != nil {
		return fmt.Errorf("capture: written snapshot does not load: %w", err)
	}
	return nil
}

// captureTracepoints reads the running kernel's tracepoint formats, keyed
// by their path under a snapshot's tracepoints/: available_events, and
// events/SYSTEM/EVENT/format for each event it lists and for the ftrace
// events. None without a tracefs that lists events.
func captureTracepoints() (map[string][]byte, error) {
	dir := tracingDir()
	if dir == "" {
		return nil, nil
	}
	list, err := os.ReadFile(filepath.Join(dir, "available_events"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{"available_events": list}
	for _, line := range strings.Split(string(list), "\n") {
		sys, name, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		rel := filepath.Join("events", sys, name, "format")
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s:%s: %w", sys, name, err)
		}
		out[rel] = b
	}
	ft, err := filepath.Glob(filepath.Join(dir, "events", FtraceSystem, "*", "format"))
	if err != nil {
		return nil, err
	}
	for _, p := range ft {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("ftrace event: %w", err)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil, err
		}
		out[rel] = b
	}
	return out, nil
}
