package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDerivedConfig models the pinned kernels from what a running kernel
// shows without its build configuration (kallsyms, version, CPUs) and
// requires every option ktrace's rules use to equal the real config's.
func TestDerivedConfig(t *testing.T) {
	for _, rel := range []string{"6.1", "6.12"} {
		t.Run(rel, func(t *testing.T) {
			src := snapshotDir(t, rel)
			dir := t.TempDir()
			for _, f := range []string{FileVersion, FileCPUs, FileKallsyms} {
				if err := os.Symlink(filepath.Join(must(filepath.Abs(src)), f), filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			bare, err := LoadSnapshot(dir)
			if err != nil {
				t.Fatal(err)
			}
			full := snapshot(t, rel)
			opts := []string{"CONFIG_X86_64", "CONFIG_ARM64"}
			for _, s := range configSignals {
				opts = append(opts, s.option)
			}
			for _, o := range opts {
				if got, want := bare.Config(o), full.Config(o); got != want {
					t.Errorf("%s: derived %q, config file %q", o, got, want)
				}
			}
			if bare.Arch().Name != full.Arch().Name || bare.Arch().ParamMaxStack != full.Arch().ParamMaxStack {
				t.Errorf("arch %+v, want %+v", bare.Arch(), full.Arch())
			}
			facts := map[string]Fact{}
			for _, f := range bare.Facts() {
				facts[f.Name] = f
			}
			for _, name := range []string{"release", "symbols", "config", "kprobe blacklist", "ftrace functions", "CONFIG_X86_KERNEL_IBT"} {
				if f, ok := facts[name]; !ok || f.Source == "" {
					t.Errorf("fact %q missing or without source: %+v", name, f)
				}
			}
			if facts["kprobe blacklist"].Value != "unknown" {
				t.Errorf("blacklist fact = %+v, want unknown", facts["kprobe blacklist"])
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
