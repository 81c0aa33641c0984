package shell

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"

	"github.com/ktrace-dev/ktrace/grammar"
)

// killCommand is what a script's kill is run as: the interpreter takes
// "kill" for a builtin it does not have.
const killCommand = "\x00ktrace-kill"

// shKill is busybox's kill: `kill [-SIG | -s SIG | -n NUM] PID...` sends
// SIG (TERM by default; 0 only checks) to each PID, a negative one being
// a process group; `kill -l` lists the signals. A failure is said per PID
// on stderr, and the status is 1. Background jobs of the script have no
// process ID of their own here ($! names them "gN"): they are refused.
func shKill(stdout, stderr io.Writer, args []string) error {
	sig := syscall.SIGTERM
	if len(args) > 0 && args[0] == "-l" {
		return killList(stdout, stderr, args[1:])
	}
	// One signal option at most; what follows are process IDs (a
	// negative one after "--" or the option).
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "--" {
		a := args[0]
		args = args[1:]
		spec := a[1:]
		if a == "-s" || a == "-n" {
			if len(args) == 0 {
				fmt.Fprintf(stderr, "kill: option requires an argument -- %c\n", a[1])
				return interp.ExitStatus(1)
			}
			spec, args = args[0], args[1:]
		}
		n := signalByName(spec)
		if v, err := strconv.Atoi(spec); err == nil {
			n = v
		}
		if n < 0 || n > 64 {
			fmt.Fprintf(stderr, "kill: bad signal name '%s'\n", spec)
			return interp.ExitStatus(1)
		}
		sig = syscall.Signal(n)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "kill: usage: kill [-s SIG | -SIG] PID...")
		return interp.ExitStatus(1)
	}
	status := 0
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil {
			if strings.HasPrefix(a, "g") || strings.HasPrefix(a, "%") {
				fmt.Fprintf(stderr, "kill: can't kill %s: a background job of ktrace sh has no process ID\n", a)
			} else {
				fmt.Fprintf(stderr, "kill: invalid number '%s'\n", a)
			}
			status = 1
			continue
		}
		if err := syscall.Kill(pid, sig); err != nil {
			fmt.Fprintf(stderr, "kill: can't kill pid %d: %s\n", pid, grammar.Strerror(grammar.ErrnoOf(err)))
			status = 1
		}
	}
	if status != 0 {
		return interp.ExitStatus(uint8(status))
	}
	return nil
}

// killList is `kill -l [NUM...]`: the signals' names, or the name of
// each number given.
func killList(w, stderr io.Writer, nums []string) error {
	if len(nums) == 0 {
		for n := 1; n < 32; n++ {
			if name := unix.SignalName(syscall.Signal(n)); name != "" {
				fmt.Fprintf(w, "%2d) %s\n", n, strings.TrimPrefix(name, "SIG"))
			}
		}
		return nil
	}
	for _, a := range nums {
		n, err := strconv.Atoi(a)
		name := ""
		if err == nil {
			name = unix.SignalName(syscall.Signal(n))
		}
		if name == "" {
			fmt.Fprintf(stderr, "kill: bad signal name '%s'\n", a)
			return interp.ExitStatus(1)
		}
		fmt.Fprintln(w, strings.TrimPrefix(name, "SIG"))
	}
	return nil
}

// signalByName is the number of signal name (with or without "SIG",
// any case), -1 when there is none.
func signalByName(name string) int {
	n := strings.ToUpper(name)
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if s := unix.SignalNum(n); s != 0 {
		return int(s)
	}
	return -1
}
