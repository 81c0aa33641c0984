package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The tracefs script suite: testdata/tracefs-tests/*.sh, shell scripts in
// the style of the kernel's ftrace selftests. Each runs in a tracefs
// directory from a clean state (no dynamic events, empty error_log) and
// passes or fails by its exit status. The same scripts run against ktrace
// sh, a ktrace mount and the kernels' own tracefs (in the boot that runs
// the corpus).

// ScriptRunner is the guest shell code that runs every script under
// ScriptDir in a clean tracefs (the shell's working directory) and prints
// "@@RESULT NAME STATUS" after each script's output; then InstanceRuns.
const ScriptRunner = `for t in ` + ScriptDir + `/*.sh; do
	echo 0 > events/enable; echo > dynamic_events; echo > error_log
	sh "$t"
	echo "@@RESULT $(basename "$t") $?"
done
` + InstanceRuns

// InstanceRuns is the guest shell code that runs the scripts flagged for
// instances a second time, as ftracetest does: each in a new tracing
// instance (instances/ktt), made before and removed after, the result
// named "instance/NAME" (status 99 when the instance cannot be removed).
const InstanceRuns = `top=$(pwd)
for t in ` + ScriptDir + `/*.sh; do
	grep -q '^# flags:.*instance' "$t" || continue
	echo 0 > events/enable; echo > dynamic_events; echo > error_log
	mkdir instances/ktt && cd instances/ktt && sh "$t"; st=$?
	cd "$top"
	rmdir instances/ktt || st=99
	echo "@@RESULT instance/$(basename "$t") $st"
done
`

// InstanceWrapper runs the script named by its first argument in a new
// tracing instance, for shells that run one script each (ktrace sh):
// the script is sourced, so it runs in the same tree.
const InstanceWrapper = `mkdir instances/ktt || exit 98
cd instances/ktt || exit 97
. "$1"
`

// InstanceFlag is the header line that flags a script for a second run
// in a tracing instance (ftracetest's "flags: instance").
const InstanceFlag = "# flags: instance"

// SuiteRuns lists the runs of the suite's scripts: every name, then
// "instance/NAME" for each script flagged for instances.
func SuiteRuns(dir string, names []string) ([]string, error) {
	inst, err := InstanceScripts(dir, names)
	if err != nil {
		return nil, err
	}
	out := append([]string(nil), names...)
	for _, n := range inst {
		out = append(out, "instance/"+n)
	}
	return out, nil
}

// InstanceScripts lists the scripts among names (in dir) that carry
// InstanceFlag.
func InstanceScripts(dir string, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("read script: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, InstanceFlag) {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}

// ScriptDir is where the scripts are placed in the guest.
const ScriptDir = "/t"

// SuiteScripts lists the scripts of testdata/tracefs-tests under the
// module root, by name.
func SuiteScripts(root string) (dir string, names []string, err error) {
	dir = filepath.Join(root, "testdata", "tracefs-tests")
	ms, err := filepath.Glob(filepath.Join(dir, "*.sh"))
	if err != nil {
		return "", nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(ms) == 0 {
		return "", nil, fmt.Errorf("no scripts in %s", dir)
	}
	for _, m := range ms {
		names = append(names, filepath.Base(m))
	}
	sort.Strings(names)
	return dir, names, nil
}

// SuiteFiles reads the scripts into guest files under ScriptDir.
func SuiteFiles(dir string, names []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("read script: %w", err)
		}
		files[ScriptDir+"/"+n] = b
	}
	return files, nil
}

// ScriptResult is one script's exit status and output.
type ScriptResult struct {
	Status int
	Output string
}

// ParseScriptResults splits ScriptRunner's output by its @@RESULT lines.
func ParseScriptResults(out string) (map[string]ScriptResult, error) {
	res := map[string]ScriptResult{}
	var buf strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(l, "@@RESULT "); ok {
			var name string
			var st int
			if _, err := fmt.Sscanf(rest, "%s %d", &name, &st); err != nil {
				return nil, fmt.Errorf("bad result line %q: %w", l, err)
			}
			res[name] = ScriptResult{Status: st, Output: buf.String()}
			buf.Reset()
			continue
		}
		buf.WriteString(l + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read script results: %w", err)
	}
	if len(res) == 0 {
		return nil, errors.New("no @@RESULT line in the output:\n" + out)
	}
	return res, nil
}
