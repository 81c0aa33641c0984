package main

import (
	"context"
	"crypto/md5"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// captureScript captures the guest's kernel with ktrace and lists every
// file of the snapshot's tracepoints/ with the MD5 of its content.
const captureScript = `/bin/ktrace --kernel host kernel capture /tmp/snap 2>&1; echo "@@RC $?"
cd /tmp/snap/tracepoints || exit 1
printf '@@%s\n' FILES
find . -type f | sort | while read f; do echo "$f $(md5sum < $f | cut -d' ' -f1)"; done
printf '@@%s\n' END-FILES
`

// TestCaptureTracepointsVM runs `ktrace kernel capture` in a guest of each
// pinned kernel (no /boot, no image) and wants its tracepoints/ to be the
// pinned snapshot's, captured from the same kernel: available_events,
// every listed event's format and the ftrace events' formats, byte for
// byte.
func TestCaptureTracepointsVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: captureScript, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		if !strings.Contains(s, "@@RC 0") {
			t.Fatalf("capture failed:\n%s", s)
		}
		_, rest, _ := strings.Cut(s, "@@FILES\n")
		body, _, _ := strings.Cut(rest, "@@END-FILES")
		got := strings.Split(strings.TrimSpace(body), "\n")
		var want []string
		root := filepath.Join(k.Dir, "tracepoints")
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			want = append(want, fmt.Sprintf("./%s %x", rel, md5.Sum(b)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(want)
		sort.Strings(got)
		if len(want) < 1000 {
			t.Fatalf("the pinned snapshot holds %d tracepoint files (test premise)", len(want))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			gm := map[string]bool{}
			for _, l := range got {
				gm[l] = true
			}
			var missing []string
			for _, l := range want {
				if !gm[l] {
					missing = append(missing, l)
				}
			}
			t.Errorf("captured %d files, the snapshot holds %d; of the snapshot's, not captured alike (first 20): %v", len(got), len(want), missing[:min(20, len(missing))])
		}
	})
}
