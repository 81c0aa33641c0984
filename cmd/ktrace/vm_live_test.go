package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/tracefs/live"
)

// liveScript runs under `ktrace sh` in the guest, where probes attach: the
// issue's example through the emulated tracefs files, then echo > trace,
// tracing_on 0 and a waiting trace_pipe read. Commands run through dd, an
// external program (busybox runs cat inside the shell process).
const liveScript = `echo 'p:myev do_sys_openat2 path=+0($arg2):string' >> kprobe_events
echo 1 > events/kprobes/myev/enable; echo "@@EN $?"
dd if=/etc/hostname of=/dev/null 2>/dev/null
echo @@LIVE; cat trace; echo @@END-LIVE
echo 0 > events/kprobes/myev/enable
echo @@TRACE; cat trace; echo @@END-TRACE
echo @@PROFILE; cat kprobe_profile; echo @@END-PROFILE
echo > trace
echo @@CLEARED; cat trace; echo @@END-CLEARED
echo 0 > tracing_on
echo 1 > events/kprobes/enable
dd if=/etc/hostname of=/dev/null 2>/dev/null
echo 0 > events/kprobes/enable
echo 1 > tracing_on
echo @@OFF; cat trace; echo @@END-OFF
echo @@PROFILE2; cat kprobe_profile; echo @@END-PROFILE2
echo 'r:myret do_sys_openat2 ret=$retval' >> kprobe_events
echo >> trace
echo 1 > events/kprobes/enable
(sleep 1; dd if=/etc/hostname of=/dev/null 2>/dev/null; sleep 1; echo 0 > events/kprobes/enable) &
echo @@PIPE; cat trace_pipe; echo @@END-PIPE
wait
echo @@AFTERPIPE; cat trace; echo @@END-AFTERPIPE
`

// kernelScript is the same example on the kernel's own tracefs in the
// same boot, for the trace file's layout.
const kernelScript = `echo 'p:myev do_sys_openat2 path=+0($arg2):string' >> kprobe_events
echo 1 > events/kprobes/myev/enable
dd if=/etc/hostname of=/dev/null 2>/dev/null
echo 0 > events/kprobes/myev/enable
echo @@KTRACE; cat trace; echo @@END-KTRACE
echo > kprobe_events
`

// mountScript runs the example through `ktrace mount` where the guest
// kernel has FUSE built in (6.12; 6.1 has it as a module the guest lacks),
// then trace_pipe through the mount: busybox cat waits on it, prints dd's
// hit while still running and ends when the event is disabled; a signal
// ends a waiting reader; SIGTERM to the mount ends a waiting reader and
// the mount. A watchdog powers the guest off should a reader hang.
//
// The mount lets other users in (--allow-other) with group tusers reading
// (--gid 1000 --mode 0750): tuser, in the group, reads kprobe_events and
// trace but cannot add a probe, enable or disable the event or set its
// filter (EACCES); other, outside the group, cannot even list the mount.
const mountScript = `if grep -q fuse /proc/filesystems; then
(sleep 120; echo @@WATCHDOG; poweroff -f) &
mkdir -p /tmp/tr
/bin/ktrace --kernel host mount --daemon --allow-other --gid 1000 --mode 0750 /tmp/tr >/tmp/mpid 2>/tmp/m.err
echo 'p:myev do_sys_openat2 path=+0($arg2):string' >> /tmp/tr/kprobe_events
echo @@MUSER
su tuser -c 'cat /tmp/tr/kprobe_events >/dev/null; echo "read=$?"
echo "p:byuser vfs_read" >> /tmp/tr/kprobe_events; echo "add=$?"
echo 1 > /tmp/tr/events/kprobes/myev/enable; echo "enable=$?"' 2>&1
echo "enabled=$(cat /tmp/tr/events/kprobes/myev/enable)"
echo 1 > /tmp/tr/events/kprobes/myev/enable
su tuser -c 'cat /tmp/tr/trace >/dev/null; echo "trace=$?"
echo 0 > /tmp/tr/events/kprobes/myev/enable; echo "disable=$?"
echo "common_pid == 1" > /tmp/tr/events/kprobes/myev/filter; echo "filter=$?"' 2>&1
echo "enabled=$(cat /tmp/tr/events/kprobes/myev/enable)"
su other -c 'ls /tmp/tr >/dev/null; echo "ls=$?"
echo "p:byother vfs_read" >> /tmp/tr/kprobe_events; echo "other-add=$?"' 2>&1
echo "probes=$(grep -c . /tmp/tr/kprobe_events)"
echo @@END-MUSER
dd if=/etc/hostname of=/dev/null 2>/dev/null
echo @@MOUNT; cat /tmp/tr/trace; echo @@END-MOUNT
echo @@MPROFILE; cat /tmp/tr/kprobe_profile; echo @@END-MPROFILE
echo > /tmp/tr/trace
(cat /tmp/tr/trace_pipe > /tmp/mpipe.out; echo "@@MPIPERC $?") &
sleep 2
dd if=/etc/hostname of=/dev/null 2>/dev/null
sleep 2
echo @@MPIPELIVE; cat /tmp/mpipe.out; echo @@END-MPIPELIVE
echo 0 > /tmp/tr/events/kprobes/myev/enable
wait $!
echo 1 > /tmp/tr/events/kprobes/myev/enable
cat /tmp/tr/trace_pipe > /dev/null & cpid=$!
sleep 1; kill $cpid; wait $cpid; echo "@@MKILL $?"
cat /tmp/tr/trace_pipe > /dev/null & cpid=$!
sleep 1; kill $(cat /tmp/mpid); wait $cpid; echo "@@MREADER $?"
sleep 1
echo "@@MMOUNTS $(grep -c ' /tmp/tr ' /proc/mounts)"
echo @@MERR; cat /tmp/m.err; echo @@END-MERR
fi
`

var (
	// entriesLine is the trace header's count line.
	entriesLine = regexp.MustCompile(`(?m)^# entries-in-buffer/entries-written: (\d+)/(\d+)   #P:(\d+)$`)
	// ddHostname is the expected hit: dd opening /etc/hostname.
	ddHostname = regexp.MustCompile(`(?m)^ +dd-\d+ +\[\d{3}\] [.dNhHsSbB0-9]{5} +\d+\.\d{6}: myev: \(do_sys_openat2\+0x0/0x[0-9a-f]+\) path="/etc/hostname"$`)
	// ddReturn is a return probe's hit of dd, by kernel: $retval is x64 on
	// 6.1 and, from BTF's return type, s64 on 6.12 (format files of both).
	ddReturn = map[string]*regexp.Regexp{
		"6.1":  regexp.MustCompile(`(?m)^ +dd-\d+ +\[\d{3}\] [.dNhHsSbB0-9]{5} +\d+\.\d{6}: myret: \(\S+\+0x[0-9a-f]+/0x[0-9a-f]+ <- do_sys_openat2\) ret=0x3$`),
		"6.12": regexp.MustCompile(`(?m)^ +dd-\d+ +\[\d{3}\] [.dNhHsSbB0-9]{5} +\d+\.\d{6}: myret: \(\S+\+0x[0-9a-f]+/0x[0-9a-f]+ <- do_sys_openat2\) ret=3$`),
	}
	// profileLine is kprobe_profile's line of myev.
	profileLine = regexp.MustCompile(`(?m)^  myev +(\d+) +(\d+)$`)
)

func vmSection(out, name string) string {
	_, rest, ok := strings.Cut(out, "@@"+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "@@END-"+name)
	return body
}

// header returns a trace text's '#' lines.
func header(trace string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(trace, "\n") {
		if strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func profileHits(t *testing.T, text string) uint64 {
	t.Helper()
	m := profileLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no myev line in kprobe_profile:\n%s", text)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// TestShLiveVM runs `ktrace sh` where probes attach, on both pinned
// kernels (one boot each): enabling myev attaches it, dd's open of
// /etc/hostname is in trace with the kernel's line and header layout,
// kprobe_profile counts hits, echo > trace clears, tracing_on 0 records
// nothing (hits still count), and trace_pipe waits for the hit and ends
// when the events are disabled; events/kprobes/enable attaches a return probe
// too.
func TestShLiveVM(t *testing.T) {
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kt, err := vmtest.BuildStatic(ctx, "./cmd/ktrace")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			script := kernelScript + "/bin/ktrace --kernel host sh -c " + shellQuote(liveScript) + " 2>/tmp/sh.err; echo \"@@RC $?\"\n" +
				"echo @@ERR; cat /tmp/sh.err; echo @@END-ERR\n" + mountScript
			out, err := vmtest.Run(ctx, k, vmtest.Guest{
				Script: script,
				Files: map[string][]byte{
					"/bin/ktrace":   kt,
					"/etc/hostname": []byte("ktrace-vm\n"),
					"/etc/passwd":   []byte("root:x:0:0:root:/root:/bin/sh\ntuser:x:1000:1000::/tmp:/bin/sh\nother:x:1001:1001::/tmp:/bin/sh\n"),
					"/etc/group":    []byte("root:x:0:\ntusers:x:1000:\nother:x:1001:\n"),
				},
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := string(out)
			if !strings.Contains(s, "@@RC 0") || !strings.Contains(s, "@@EN 0") {
				t.Fatalf("ktrace sh failed:\n%s", s)
			}
			if errText := vmSection(s, "ERR"); strings.TrimSpace(errText) != live.Note {
				t.Errorf("stderr = %q, want the live backend note only", errText)
			}

			kern, trace := vmSection(s, "KTRACE"), vmSection(s, "TRACE")
			if !ddHostname.MatchString(kern) {
				t.Fatalf("the kernel's trace lacks dd's hit (test premise):\n%s", kern)
			}
			if !ddHostname.MatchString(trace) {
				t.Errorf("ktrace's trace lacks dd's hit:\n%s", trace)
			}
			// The header is the kernel's but for the counts.
			strip := func(h string) string { return entriesLine.ReplaceAllString(h, "# entries") }
			if got, want := strip(header(trace)), strip(header(kern)); got != want {
				t.Errorf("trace header:\n%s\nkernel's:\n%s", got, want)
			}
			em := entriesLine.FindStringSubmatch(trace)
			lines := strings.Count(trace, "\n") - strings.Count(header(trace), "\n")
			if em == nil || em[1] != strconv.Itoa(lines) || em[1] != em[2] {
				t.Errorf("trace counts %v, want %d/%d:\n%s", em, lines, lines, trace)
			}
			if live := vmSection(s, "LIVE"); !ddHostname.MatchString(live) {
				t.Errorf("trace read while enabled, right after dd, lacks its hit:\n%s", live)
			}
			hits := profileHits(t, vmSection(s, "PROFILE"))
			if hits == 0 {
				t.Errorf("kprobe_profile shows no hits:\n%s", vmSection(s, "PROFILE"))
			}

			if c := vmSection(s, "CLEARED"); !strings.Contains(c, "entries-in-buffer/entries-written: 0/0 ") || ddHostname.MatchString(c) {
				t.Errorf("trace after echo > trace:\n%s", c)
			}
			if off := vmSection(s, "OFF"); !strings.Contains(off, "entries-in-buffer/entries-written: 0/0 ") {
				t.Errorf("trace recorded with tracing_on 0:\n%s", off)
			}
			if h2 := profileHits(t, vmSection(s, "PROFILE2")); h2 <= hits {
				t.Errorf("kprobe_profile hits %d -> %d: hits with tracing_on 0 must count", hits, h2)
			}

			pipe := vmSection(s, "PIPE")
			if !ddHostname.MatchString(pipe) || ddReturn[k.Name] == nil || !ddReturn[k.Name].MatchString(pipe) {
				t.Errorf("trace_pipe lacks dd's hits of myev and myret (events/kprobes/enable):\n%s", pipe)
			}
			after := vmSection(s, "AFTERPIPE")
			if ddHostname.MatchString(after) {
				t.Errorf("trace still holds what trace_pipe consumed:\n%s", after)
			}
			if strings.Contains(s, "@@MOUNT") {
				if mt := vmSection(s, "MOUNT"); !ddHostname.MatchString(mt) {
					t.Errorf("ktrace mount: trace lacks dd's hit:\n%s\nstderr:\n%s", mt, vmSection(s, "MERR"))
				}
				// The unprivileged users: every refusal is EACCES and
				// nothing changed.
				users := vmSection(s, "MUSER")
				for _, want := range []string{
					"read=0", "add=1", "enable=1", "enabled=0",
					"trace=0", "disable=1", "filter=1", "enabled=1",
					"ls=1", "other-add=1", "probes=1",
				} {
					if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(users) {
						t.Errorf("ktrace mount: unprivileged users: want %q in:\n%s", want, users)
					}
				}
				if n := strings.Count(users, "Permission denied"); n != 6 {
					t.Errorf("ktrace mount: %d EACCES refusals, want 6 (add, enable, disable, filter, ls, other's add):\n%s", n, users)
				}
				if merr := vmSection(s, "MERR"); !strings.Contains(merr, "ktrace: warning: this mount attaches probes to the running kernel: group 1000 can read") {
					t.Errorf("ktrace mount --gid 1000 --mode 0750 on a live mount: no warning on stderr:\n%s", merr)
				}
				if profileHits(t, vmSection(s, "MPROFILE")) == 0 {
					t.Errorf("ktrace mount: kprobe_profile shows no hits:\n%s", vmSection(s, "MPROFILE"))
				}
				if live := vmSection(s, "MPIPELIVE"); !ddHostname.MatchString(live) {
					t.Errorf("ktrace mount: cat trace_pipe had not printed dd's hit while waiting:\n%s", live)
				}
				for _, want := range []string{
					"@@MPIPERC 0\n", // the reader ended at disable
					"@@MKILL 143\n", // SIGTERM ended a waiting reader
					"@@MREADER 0\n", // the mount's SIGTERM ended a waiting reader
					"@@MMOUNTS 0\n", // and the mount
				} {
					if !strings.Contains(s, want) {
						t.Errorf("ktrace mount: want %q in:\n%s", strings.TrimSpace(want), s)
					}
				}
				t.Logf("%s: ktrace mount's trace:\n%s", k.Name, vmSection(s, "MOUNT"))
			} else if k.Name == "6.12" {
				t.Errorf("6.12 has FUSE built in, but the mount part did not run:\n%s", s)
			}
			t.Logf("%s: trace:\n%s\nkernel:\n%s\nprofile:\n%s", k.Name, trace, kern, vmSection(s, "PROFILE"))
		})
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
