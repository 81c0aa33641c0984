package trigger

import (
	"math/rand"
	"testing"
)

// Random hist commands built from the syntax's pieces, three writes to
// the two events of newWorld each: ktrace must never panic on user input.
func TestHistNoPanic(t *testing.T) {
	toks := []string{"hist:", "keys=", "cc", "aa", "ss", "bb", ":", ",", "=", "$", "ts0", "x", "+", "-", "*", "/", "(", ")", ".", "0", "3", "onmatch(", "onmax(", "onchange(", "kprobes", "f", "g", "trace(", "save(", "snapshot(", "kt_lat", "vals=", "sort=", "common_timestamp", ".usecs", ".hex", " if ", "aa == 1", "!", "pause", "synthetic_aa", "name=n"}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		w := newWorld(t)
		for j := 0; j < 3; j++ {
			s := "hist:keys="
			if r.Intn(5) == 0 {
				s = "!hist:keys="
			}
			n := r.Intn(12)
			for k := 0; k < n; k++ {
				s += toks[r.Intn(len(toks))]
			}
			ev := "f"
			if r.Intn(2) == 0 {
				ev = "g"
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic on %q: %v", s, p)
					}
				}()
				w.lists[ev].Write([]byte(s+"\n"), w.events[ev])
				w.lists[ev].Text()
			}()
		}
	}
}
