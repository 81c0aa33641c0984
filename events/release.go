package events

import (
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// release is the kernel's dyn_event_release for a removal line:
// "-:[GROUP/][EVENT] [PLACE [ARG...]]" (dynamic_events also takes
// "!...:..."). Every probe in scope that matches is removed, in creation
// order; the first removal that fails (EBUSY) stops the command. No match
// is ENOENT; nothing is logged in error_log.
func (r *Registry) release(line string, sc scope) syscall.Errno {
	argv := grammar.Split(line)
	if len(argv) == 0 {
		return syscall.EINVAL
	}
	rm, err := grammar.ParseRemoval(argv[0])
	if err != nil {
		return syscall.EINVAL
	}
	system, event, hasSystem, errno := rm.Target()
	if errno != 0 {
		return errno
	}
	ret := syscall.ENOENT
	for _, p := range append([]*Probe(nil), r.probes...) {
		ev := p.Event
		if !sc.has(ev.Kind) {
			continue
		}
		if event != "" && ev.Name != event {
			continue
		}
		if hasSystem && ev.Group != system {
			continue
		}
		// A synthetic event matches on its name alone (the kernel's
		// synth_event_match ignores the rest of the command).
		switch ev.Kind {
		case Synthetic:
		case Eprobe:
			if !matchEprobe(p, argv[1:], r.dialect) {
				continue
			}
		default:
			if !matchCommandHead(p, argv[1:], r.dialect.MaxArgStrLen) {
				continue
			}
		}
		if errno := r.freeProbe(p); errno != 0 {
			return errno
		}
		ret = 0
	}
	return ret
}

// matchCommandHead is the kernel's match of the optional tokens of a
// removal: the place as the readback prints it (fprobes: the symbol
// without %return), then a prefix of the arguments, each compared as
// "name=body" cut to MAX_ARGSTR_LEN bytes.
func matchCommandHead(p *Probe, argv []string, maxArgStr int) bool {
	if len(argv) == 0 {
		return true
	}
	if u := p.Uprobe; u != nil {
		// The typed path whole, then the offsets as the readback
		// prints them.
		off, ok := strings.CutPrefix(argv[0], u.Path+":")
		if !ok || clip(uprobePlaceText(u)[len(u.Path)+1:], maxArgStr) != off {
			return false
		}
	} else {
		place := p.Symbol
		if p.Event.Kind.isKprobe() {
			place = placeText(p)
		}
		if clip(place, maxArgStr) != argv[0] {
			return false
		}
	}
	return matchArgs(p, argv[1:], maxArgStr)
}

// matchArgs matches removal tokens against a prefix of the probe's
// arguments, each as "name=body" cut to MAX_ARGSTR_LEN bytes.
func matchArgs(p *Probe, argv []string, maxArgStr int) bool {
	if len(p.Args) < len(argv) {
		return false
	}
	for i, tok := range argv {
		if clip(p.Args[i].Name+"="+p.Args[i].Body, maxArgStr) != tok {
			return false
		}
	}
	return true
}

// clip cuts s to n bytes, as snprintf into a buffer of n+1 bytes does.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
