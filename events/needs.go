package events

import (
	"errors"
	"fmt"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// LineNeeds tells which kernel features a line, accepted under the newest
// syntax, needs beyond what the model's own kernel accepts. It returns nil
// when the model's kernel accepts the line as it is. When the difference
// is not one of the named features, it names the kernel's own verdict.
func LineNeeds(m *kernel.Model, line string) []string {
	major, minor, _ := m.KernelVersion()
	own := grammar.DialectFor(major, minor)
	if own.Name == grammar.Latest.Name {
		return nil // the model's kernel speaks the newest syntax
	}
	accepts := func(d *grammar.Dialect) (bool, error) {
		err := NewRegistry(m, d).Exec(DynamicEvents, line)
		return err == nil, err
	}
	ok, ownErr := accepts(own)
	if ok {
		return nil
	}
	// A line 6.12's syntax rejects as well (e.g. a removal of an event
	// this fresh tracefs does not have) needs no newer kernel.
	if latest, _ := accepts(grammar.Latest); !latest {
		return nil
	}
	// Turn the missing features on one by one until the line passes, then
	// drop every one it passes without.
	d := *own
	var on []grammar.Feature
	passed := false
	for _, f := range grammar.Features {
		if f.Has(&d) {
			continue
		}
		f.Enable(&d)
		on = append(on, f)
		if passed, _ = accepts(&d); passed {
			break
		}
	}
	var names []string
	if passed {
		for i, f := range on {
			trial := *own
			for j, g := range on {
				if j != i {
					g.Enable(&trial)
				}
			}
			if without, _ := accepts(&trial); !without {
				names = append(names, f.Name)
			}
		}
	}
	if len(names) == 0 {
		why := "rejected"
		var we *WriteError
		if errors.As(ownErr, &we) && we.Last() != nil {
			why = we.Last().Msg
		}
		names = append(names, fmt.Sprintf("Linux 6.12's rules (Linux %s says: %s)", own.Name, why))
	}
	return names
}
