package vmtest

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// DefaultBusybox is where Debian's busybox-static installs its binary.
const DefaultBusybox = "/bin/busybox"

// busyboxPath is the static busybox to put in guests: KTRACE_BUSYBOX if set,
// else DefaultBusybox.
func busyboxPath() string {
	if p := os.Getenv("KTRACE_BUSYBOX"); p != "" {
		return p
	}
	return DefaultBusybox
}

// fallbackApplets are linked when the host busybox cannot list its applets
// (e.g. a foreign-architecture binary): enough for /init and simple scripts.
var fallbackApplets = []string{
	"sh", "mount", "umount", "cat", "echo", "printf", "ls", "grep", "stty", "head", "tail",
	"wc", "sleep", "poweroff", "mkdir", "rm", "tr", "sed", "cut", "test", "[", "true", "false",
	"uname", "dmesg", "env", "sort", "uniq", "awk", "od", "xargs", "find", "date",
}

// loadBusybox reads the busybox binary and the names of its applets. It
// rejects a dynamically linked binary, which could not run in the guest.
func loadBusybox() ([]byte, []string, error) {
	p := busyboxPath()
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("vmtest: busybox (apt-get install busybox-static): %w", err)
	}
	if err := checkStatic(data); err != nil {
		return nil, nil, fmt.Errorf("vmtest: busybox %s: %w", p, err)
	}
	applets := fallbackApplets
	if out, err := exec.Command(p, "--list").Output(); err == nil {
		if list := strings.Fields(string(out)); len(list) > 0 {
			applets = list
		}
	}
	return data, applets, nil
}

// checkStatic reports an error unless data is an ELF executable without a
// program interpreter, i.e. one that needs no shared libraries.
func checkStatic(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("built for %v, the guest is x86_64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (needs the static build, apt-get install busybox-static)")
		}
	}
	return nil
}

// initScript is the guest's /init. %[1]s is the run's marker; the script's
// exit status follows it on the result port. Boot progress goes to the
// console, where the host reads the guest's uptime for its statistics.
const initScript = `#!/bin/sh
export PATH=/bin HOME=/
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
stty -F /dev/ttyS1 raw -echo || echo "vmtest: stty on ttyS1 failed" >/dev/console
read up rest </proc/uptime
echo "%[1]s-START $up" >/dev/console
cd /sys/kernel/tracing
sh /vmtest/script.sh >/dev/ttyS1 2>&1
rc=$?
read up rest </proc/uptime
echo "%[1]s-END $up" >/dev/console
echo "%[1]s $rc" >/dev/ttyS1
poweroff -f
`

// buildInitramfs packs the guest: busybox and its applet links in /bin,
// /dev/console, the mount points, the caller's files, the script and /init.
// The result is a gzip-compressed newc cpio archive.
func buildInitramfs(g Guest, marker string) ([]byte, error) {
	bb, applets, err := loadBusybox()
	if err != nil {
		return nil, err
	}
	t := newTree()
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "etc", "root", "vmtest"} {
		if err := t.dir(d); err != nil {
			return nil, err
		}
	}
	if err := t.charDev("dev/console", 5, 1); err != nil {
		return nil, err
	}
	if err := t.file("bin/busybox", bb, 0o755); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := t.symlink("bin/"+a, "busybox"); err != nil {
			return nil, err
		}
	}
	for p, data := range g.Files {
		if err := t.file(p, data, 0o755); err != nil {
			return nil, fmt.Errorf("vmtest: guest file: %w", err)
		}
	}
	if err := t.file("vmtest/script.sh", []byte(g.Script), 0o755); err != nil {
		return nil, err
	}
	if err := t.file("init", []byte(fmt.Sprintf(initScript, marker)), 0o755); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("vmtest: gzip: %w", err)
	}
	if err := t.writeTo(zw); err != nil {
		return nil, fmt.Errorf("vmtest: initramfs: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("vmtest: initramfs: %w", err)
	}
	return buf.Bytes(), nil
}
