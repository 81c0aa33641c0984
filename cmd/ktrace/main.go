// Command ktrace checks, manages and runs Linux kprobe and fprobe event
// definitions against a model of a kernel: a line is accepted or rejected
// exactly as the kernel's kprobe_events / dynamic_events would, with the
// same errno, error_log entry, readback and format files.
//
// Exit codes: 0 success, 1 a rejected line or failed operation, 2 a usage
// error, 3 a missing privilege or kernel feature.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ktrace-dev/ktrace/internal/cpuprofile"
	"github.com/ktrace-dev/ktrace/internal/version"
	"github.com/ktrace-dev/ktrace/tracer"
)

// Exit codes.
const (
	exitOK       = 0
	exitRejected = 1
	exitUsage    = 2
	exitNoAccess = 3
)

// exitError carries the exit code a failure maps to. quiet means the
// message was already printed (e.g. an error_log entry).
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func failf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// rejected is the quiet exit 1 after output that already explains it.
var rejected = &exitError{code: exitRejected, quiet: true}

func main() {
	// A copy of ktrace started to remove a dead ktrace's tracefs probes
	// does only that (tracer.StartReaper).
	tracer.RunReaperIfAsked()
	stop := cpuprofile.Start(os.Getenv("KTRACE_CPUPROFILE"), os.Stderr)
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes ktrace with args and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet && ee.err != nil {
			fmt.Fprintf(stderr, "ktrace: %v\n", ee.err)
		}
		return ee.code
	}
	// Everything cobra itself rejects (unknown verb, bad flag, wrong
	// argument count) is a usage error.
	fmt.Fprintf(stderr, "ktrace: %v\n", err)
	fmt.Fprintf(stderr, "Run 'ktrace --help' for usage.\n")
	return exitUsage
}

// globals are the persistent flags.
type globals struct {
	kernel  string
	syntax  string
	output  string
	session string
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "ktrace",
		Short:         "Check and manage Linux kprobe/fprobe event definitions against a kernel model",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.kernel, "kernel", os.Getenv("KTRACE_KERNEL"), "kernel model: host, embedded or a snapshot DIR (default: $KTRACE_KERNEL, else host when probeable, else embedded)")
	pf.StringVar(&g.syntax, "syntax", "", "probe syntax: kernel (the model's release) or latest (6.12 on any model); default kernel for check/sh, latest otherwise")
	pf.StringVarP(&g.output, "output", "o", "text", "output format: text or json")
	pf.StringVar(&g.session, "session", "", "session file (default $XDG_STATE_HOME/ktrace/session or ~/.local/state/ktrace/session)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if g.output != "text" && g.output != "json" {
			return &exitError{code: exitUsage, err: fmt.Errorf("--output must be text or json, not %q", g.output)}
		}
		if g.syntax != "" && g.syntax != "kernel" && g.syntax != "latest" {
			return &exitError{code: exitUsage, err: fmt.Errorf("--syntax must be kernel or latest, not %q", g.syntax)}
		}
		return nil
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w (%s)", err, seeHelp(cmd))}
	})
	root.Version = version.String()
	root.SetVersionTemplate("ktrace {{.Version}}\n")
	registerFlagCompletions(root)
	root.AddCommand(
		newCheckCmd(g),
		newAddCmd(g),
		newRmCmd(g),
		newLsCmd(g),
		newFormatCmd(g),
		newEnableCmd(g, true),
		newEnableCmd(g, false),
		newShCmd(g),
		newMountCmd(g),
		newKernelCmd(g),
		newRecordCmd(g),
		newFuncsCmd(g),
		newArgsCmd(g),
	)
	applyHelp(root, helpSections())
	for _, c := range root.Commands() {
		switch c.Name() {
		case "funcs", "args":
			c.ValidArgsFunction = completeFuncs(g)
		case "check", "add":
			c.ValidArgsFunction = completeLine(g)
		case "rm", "format":
			c.ValidArgsFunction = completeEvents(g, nil)
		case "enable":
			c.ValidArgsFunction = completeEvents(g, func(on bool) bool { return !on })
		case "disable":
			c.ValidArgsFunction = completeEvents(g, func(on bool) bool { return on })
		}
		if c.Name() == "check" {
			c.RegisterFlagCompletionFunc("file", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return noFileComp([]string{"kprobe_events", "dynamic_events", "synthetic_events"})
			})
		}
	}
	return root
}

// usageArgs wraps a cobra argument validator so its failures exit 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%w (%s)", err, seeHelp(cmd))}
		}
		return nil
	}
}
