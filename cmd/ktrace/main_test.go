package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The CLI benchmarks run this binary as ktrace.
	if os.Getenv(benchExecEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"ktrace": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scripts in testdata/script. Expectations come
// from the pinned kernels (tools/vmsh) or the kernel's rules. Scripts run
// with the embedded 6.12 model unless they pass --kernel; $KERNELS points
// at the pinned snapshots (../shared/kernels, or $KTRACE_SNAPSHOTS) and the [kernels] condition
// tells whether they are present.
func TestScripts(t *testing.T) {
	kernels, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "kernels"))
	if d := os.Getenv("KTRACE_SNAPSHOTS"); d != "" {
		kernels = d
	}
	_, err := os.Stat(filepath.Join(kernels, "6.1", "kallsyms"))
	have := err == nil
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(e *testscript.Env) error {
			e.Setenv("KTRACE_KERNEL", "embedded")
			e.Setenv("KERNELS", kernels)
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, "state"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "kernels" {
				return have, nil
			}
			return false, nil
		},
		RequireExplicitExec: true,
	})
}
