// Package complete computes the shell-completion candidates of ktrace's
// arguments: kernel models, a probe line's place, and a session's event
// names. cmd/ktrace hands them to cobra's completion.
package complete
