package complete

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/kernel"
)

// maxFuncs bounds the function names offered at once.
const maxFuncs = 2000

// Kernels are the values of --kernel starting with toComplete: host,
// embedded and the directories a snapshot may be in (each with a trailing
// slash, to go on completing inside it).
func Kernels(toComplete string) []string {
	vals := []string{"host\tthe running kernel", "embedded\tthe 6.12.95 snapshot built into ktrace"}
	dir, base := filepath.Split(toComplete)
	d := dir
	if d == "" {
		d = "."
	}
	if ents, err := os.ReadDir(d); err == nil {
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), base) {
				continue
			}
			vals = append(vals, dir+e.Name()+"/")
		}
	}
	return vals
}

// Funcs are the model's function names starting with prefix.
func Funcs(m *kernel.Model, prefix string) []string {
	return m.FuncNamesWithPrefix(prefix, maxFuncs)
}

// Line completes a probe line whose last word is its place ("p:ev vfs_re"
// -> "p:ev vfs_read"); nothing for any other word.
func Line(m *kernel.Model, toComplete string) []string {
	words := strings.Split(toComplete, " ")
	if len(words) != 2 {
		return nil
	}
	var out []string
	for _, n := range Funcs(m, words[1]) {
		out = append(out, words[0]+" "+n)
	}
	return out
}

// Events are reg's GROUP/EVENT names starting with toComplete, but those
// already given and, when want is set, those whose enabled state it
// refuses.
func Events(reg *events.Registry, toComplete string, given []string, want func(enabled bool) bool) []string {
	var out []string
	for _, ev := range reg.Events() {
		name := ev.Group + "/" + ev.Name
		if want != nil && !want(ev.Enabled) || slices.Contains(given, name) {
			continue
		}
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out
}
