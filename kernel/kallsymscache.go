package kernel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Reading /proc/kallsyms makes the kernel format every symbol it has:
// on the pinned 6.12 kernel under qemu's emulation, about a second for
// 154,000 lines, most of the time ktrace takes to start. Within one boot
// the kernel's own symbols never change, and module symbols change only
// when modules are loaded or unloaded; so ktrace keeps the text it read
// in a cache file, valid for one boot (boot_id) of one release with one
// set of loaded modules (their names, sizes and load addresses from
// /proc/modules), and reads /proc/kallsyms again whenever any of these
// differ.
//
// Entries of the pseudo-modules [bpf] and [__builtin__*] (BPF programs,
// ftrace and kprobe trampolines) come and go with every tracer's
// programs; the kernel's probe rules never look at them (kprobe lookups
// and number_of_same_symbols walk vmlinux and real modules), so the host
// model leaves them out, whether its kallsyms comes from the kernel or
// from the cache.
//
// The cache holds kernel addresses, which the kernel shows only to
// privileged readers: the file is the reader's own (mode 0600 in a
// directory of mode 0700).

const (
	hostBootID  = "/proc/sys/kernel/random/boot_id"
	hostModules = "/proc/modules"
	cacheMagic  = "ktrace-kallsyms-v1 "
)

// kallsymsCacheKey identifies the kernel symbols of this boot: the
// release, the boot id and the loaded modules. ok is false when the boot
// id cannot be read (no cache then).
func kallsymsCacheKey(release string) (string, bool) {
	boot, err := os.ReadFile(hostBootID)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", release, bytes.TrimSpace(boot))
	if mods, err := os.ReadFile(hostModules); err == nil {
		// "name size refcount deps state address": the reference count,
		// dependencies and state change without moving any symbol.
		for _, line := range strings.Split(string(mods), "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 {
				fmt.Fprintf(h, "%s %s %s\n", f[0], f[1], f[5])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// bootKey names this boot's caches: the release, and the key of its kernel
// symbols (kallsymsCacheKey), computed once per model load; ok is false
// when there is no key (no cache then).
type bootKey struct {
	release, key string
	ok           bool
}

func newBootKey(release string) bootKey {
	key, ok := kallsymsCacheKey(release)
	return bootKey{release: release, key: key, ok: ok}
}

// kallsymsCachePath is where the cache of file name ("kallsyms",
// "available_filter_functions", "kprobes-blacklist") of this release
// lives.
func kallsymsCachePath(name, release string) (string, bool) {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return "", false
	}
	return filepath.Join(dir, "ktrace", name+"-"+release), true
}

// readHostKallsyms returns the running kernel's symbols without the
// pseudo-module entries, from the cache when it is valid for this boot,
// else from /proc/kallsyms (refreshing the cache), and says which.
func readHostKallsyms(bk bootKey) ([]byte, string, error) {
	b, from, err := readCachedHostFile(hostKallsyms, "kallsyms", "", bk, withoutPseudoModules, func(b []byte) bool { return zeroAddresses(b, false) })
	if err != nil {
		return nil, "", err
	}
	if zeroAddresses(b, false) {
		return nil, "", fmt.Errorf("%s: %w", hostKallsyms, ErrHiddenAddresses)
	}
	return b, from, nil
}

// readCachedHostFile reads a host file whose content is fixed for one boot
// and one set of modules, through the cache described above: the cached
// copy when its key matches, else the file itself, passed through fix and
// written to the cache unless hidden says the kernel hid its addresses
// from this reader (hidden may be nil: nothing is). hint is added to the
// errors of reading the file.
func readCachedHostFile(path, name, hint string, bk bootKey, fix func([]byte) []byte, hidden func([]byte) bool) ([]byte, string, error) {
	key := bk.key
	cache, pathed := kallsymsCachePath(name, bk.release)
	useCache := bk.ok && pathed
	if useCache {
		if b, err := readProcFile(cache); err == nil {
			header := cacheMagic + key + "\n"
			if bytes.HasPrefix(b, []byte(header)) {
				return b[len(header):], path + " (as cached for this boot in " + cache + ")", nil
			}
		}
	}
	b, err := readHostFile(path, hint)
	if err != nil {
		return nil, "", err
	}
	if fix != nil {
		b = fix(b)
	}
	if useCache && (hidden == nil || !hidden(b)) {
		// A cache that cannot be written only costs the next start its
		// time; the content is right either way.
		writeCacheFile(cache, append([]byte(cacheMagic+key+"\n"), b...))
	}
	return b, path, nil
}

// isPseudoModule reports whether a kallsyms module name is one of the
// kernel's pseudo-modules rather than a loaded module.
func isPseudoModule(mod string) bool {
	return mod == "bpf" || strings.HasPrefix(mod, "__builtin__")
}

// withoutPseudoModules drops the [bpf] and [__builtin__*] lines of a
// kallsyms text. The kernel lists them after vmlinux and the modules, so
// usually the text is only cut short; otherwise it is copied without them.
func withoutPseudoModules(b []byte) []byte {
	first := -1
	tail := true
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			end = len(b) - off
		}
		line := b[off : off+end]
		pseudo := false
		if t := bytes.IndexByte(line, '\t'); t >= 0 {
			mod := strings.Trim(strings.TrimSpace(string(line[t+1:])), "[]")
			pseudo = isPseudoModule(mod)
		}
		if pseudo && first < 0 {
			first = off
		} else if !pseudo && first >= 0 {
			tail = false
			break
		}
		off += end + 1
	}
	switch {
	case first < 0:
		return b
	case tail:
		return b[:first]
	}
	out := make([]byte, 0, len(b))
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		if t := bytes.IndexByte(line, '\t'); t >= 0 && isPseudoModule(strings.Trim(strings.TrimSpace(string(line[t+1:])), "[]")) {
			continue
		}
		out = append(out, line...)
	}
	return out
}
