// Command tracefs-runner is the guest side of ktrace's conformance test: it
// runs inside a VM booted by internal/vmtest, reads conformance cases (JSON
// lines of conformance.Case) from the file named on its command line,
// applies each to the real tracefs and prints one conformance.Result JSON
// line per case on stdout.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/ktrace-dev/ktrace/internal/conformance"
)

func main() {
	root := flag.String("tracefs", "/sys/kernel/tracing", "tracefs mount point")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracefs-runner [-tracefs DIR] CASES.jsonl")
		os.Exit(2)
	}
	if err := run(*root, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "tracefs-runner:", err)
		os.Exit(1)
	}
}

func run(root, casesPath string) error {
	b, err := os.ReadFile(casesPath)
	if err != nil {
		return err
	}
	t := &conformance.Tracefs{Root: root}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	disable := true // a fresh boot has nothing enabled, but be safe
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c conformance.Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("%s:%d: %w", casesPath, n, err)
		}
		r := t.RunCase(&c, disable)
		// A trigger may have enabled an event (enable_event).
		disable = len(c.Enable) > 0 || conformance.IsEventFile(c.File)
		line, err := r.MarshalLine()
		if err != nil {
			return err
		}
		// One write per case: a guest that dies mid-run still leaves
		// every finished case on the host.
		if _, err := os.Stdout.Write(line); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Leave nothing enabled or defined for what runs after the cases.
	return t.Clear(disable)
}
