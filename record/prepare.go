package record

import (
	"errors"

	"github.com/ktrace-dev/ktrace/tracer"
)

// SplitCommand splits record's arguments at "--" (dash: its index in
// args, -1 for none) into the probe lines and the command to run, and
// checks the options that go with a command: --follow needs one and
// excludes --pid.
func SplitCommand(args []string, dash int, follow bool, pid int) (lines, command []string, err error) {
	lines = args
	if dash >= 0 {
		lines, command = args[:dash], args[dash:]
		if len(command) == 0 {
			return nil, nil, errors.New("no command after --")
		}
	}
	if follow && len(command) == 0 {
		return nil, nil, errors.New("--follow needs a command after --")
	}
	if follow && pid != 0 {
		return nil, nil, errors.New("--pid and --follow exclude each other")
	}
	return lines, command, nil
}

// Prepared is what a recording needs before its events are known,
// started while the caller loads the kernel model: the check that this
// process can trace (tracer.Check) and the ring buffer (tracer.PrepareRing;
// Options.Ring).
type Prepared struct {
	Ring    *tracer.PreparedRing
	checked chan error
}

// Prepare starts the check and makes a ring of ringSize bytes (0: the
// default ring of small events) in the background.
func Prepare(ringSize int) *Prepared {
	p := &Prepared{checked: make(chan error, 1)}
	go func() { p.checked <- tracer.Check() }()
	p.Ring = tracer.PrepareRing(ringSize)
	return p
}

// Checked waits for the check: a missing privilege or kernel feature
// (tracer.ErrUnavailable), or nil.
func (p *Prepared) Checked() error {
	err := <-p.checked
	p.checked <- err
	return err
}
