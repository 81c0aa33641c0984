package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// liveSuiteScript runs in a guest of a pinned kernel. It lists every
// static event's format from the kernel's tracefs and from ktrace with
// the host model (the model read from the running kernel, with the live
// backend), then runs the script suite through ktrace: in a `ktrace
// mount` where the guest kernel has FUSE built in (6.12), else with one
// `ktrace sh` per script (6.1 has FUSE as a module the guest lacks).
const liveSuiteScript = `sh /formats.sh > /tmp/kformats
if grep -q fuse /proc/filesystems; then
	(sleep 600; echo @@WATCHDOG; poweroff -f) &
	mkdir -p /tmp/tr
	/bin/ktrace --kernel host mount --daemon /tmp/tr >/tmp/mpid 2>/tmp/m.err
	cd /tmp/tr
	echo "@@TARGET mount"
	sh /formats.sh > /tmp/ktformats
	for t in ` + ScriptDir + `/*.sh; do
		echo 0 > events/enable; echo > dynamic_events; echo > error_log
		sh "$t"
		echo "@@RESULT $(basename "$t") $?"
	done
	cd /
	kill $(cat /tmp/mpid)
	sleep 1
	echo @@MERR; cat /tmp/m.err; echo @@END-MERR
else
	echo "@@TARGET sh"
	/bin/ktrace --kernel host sh /formats.sh > /tmp/ktformats 2>/tmp/sh.err
	for t in ` + ScriptDir + `/*.sh; do
		/bin/ktrace --kernel host sh "$t" 2>>/tmp/sh.err
		echo "@@RESULT $(basename "$t") $?"
	done
fi
echo "@@FORMATS $(grep -c '^== ' /tmp/kformats) $(grep -c '^== ' /tmp/ktformats)"
if cmp -s /tmp/kformats /tmp/ktformats; then echo @@FORMATS-SAME; else echo @@FORMATS-DIFF; diff /tmp/kformats /tmp/ktformats | head -40; fi
`

// formatsScript prints every static event's format file (the kernel's
// internal ftrace/ system aside), each after a "== PATH" line.
const formatsScript = `for f in events/*/*/format; do
	case $f in events/ftrace/*) continue ;; esac
	echo "== $f"; cat $f
done
`

// TestSuiteLiveVM runs the tracefs script suite (testdata/tracefs-tests)
// where users run ktrace: in a guest of each pinned kernel with no /boot
// and no image, through `ktrace --kernel host` with the live backend, on
// a mount (6.12) or through `ktrace sh` (6.1). Every script passes there,
// as on the kernel's own tracefs (TestConformanceVM), and every static
// event's format file is the kernel's, byte for byte.
func TestSuiteLiveVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, names, err := SuiteScripts(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := SuiteFiles(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	files["/bin/ktrace"] = kt
	files["/formats.sh"] = []byte(formatsScript)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: liveSuiteScript, Files: files})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		target := "?"
		if _, rest, ok := strings.Cut(s, "@@TARGET "); ok {
			target, _, _ = strings.Cut(rest, "\n")
		}
		body := s
		if i := strings.Index(s, "@@TARGET "); i >= 0 {
			body = s[i:]
			if j := strings.IndexByte(body, '\n'); j >= 0 {
				body = body[j+1:]
			}
		}
		if i := strings.Index(body, "@@FORMATS "); i >= 0 {
			body = body[:i]
		}
		if i := strings.Index(body, "@@MERR"); i >= 0 {
			body = body[:i]
		}
		res, err := ParseScriptResults(body)
		if err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
		pass := 0
		for _, n := range names {
			r, ok := res[n]
			switch {
			case !ok:
				t.Errorf("%s (%s): %s did not run", k.Name, target, n)
			case r.Status != 0:
				t.Errorf("%s (%s): %s failed (status %d):\n%s", k.Name, target, n, r.Status, r.Output)
			default:
				pass++
			}
		}
		t.Logf("tracefs conformance: %d/%d scripts pass on ktrace %s with the host model and the live backend (%s)", pass, len(names), target, k.Name)
		if !strings.Contains(s, "@@FORMATS-SAME") {
			t.Errorf("%s (%s): static event formats differ from the kernel's:\n%s", k.Name, target, s[strings.Index(s, "@@FORMATS "):])
		} else {
			_, rest, _ := strings.Cut(s, "@@FORMATS ")
			line, _, _ := strings.Cut(rest, "\n")
			t.Logf("%s (%s): format files (kernel, ktrace): %s, identical", k.Name, target, line)
		}
	})
}
