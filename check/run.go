package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ktrace-dev/ktrace/events"
)

// Report says how Run reports the results of `ktrace check`.
type Report struct {
	// File is the control file every line goes to; nil: DefaultFile.
	File *events.File
	// Formats keeps the events' format files in the results (in sequence,
	// each event once, on the line that created it); without it formats
	// are left empty.
	Formats bool
	// ErrorsOnly reports rejected lines only.
	ErrorsOnly bool
	// JSON writes one JSON object per line instead of the text form.
	JSON bool
}

// Run checks lines in order and writes each result to out: as text
// (WriteText, prefixed with FILE:LINE for lines read from a file) with
// its hints on hints, or as one JSON object per line. It reports whether
// any line was rejected.
func (c *Checker) Run(lines []Line, o Report, out *bufio.Writer, hints io.Writer) (rejected bool, err error) {
	shown := map[string]string{} // GROUP/EVENT -> format given
	enc := json.NewEncoder(out)
	// No HTML escaping, so "->" in print formats stays readable.
	enc.SetEscapeHTML(false)
	for _, sl := range lines {
		f := DefaultFile(sl.Text)
		if o.File != nil {
			f = *o.File
		}
		r := c.Check(sl.Text, f)
		if sl.File != "" {
			src := fmt.Sprintf("%s:%d", sl.File, sl.No)
			r.Source = &src
		}
		// Formats only on request, each event once per run when the
		// events live on from line to line.
		if !o.Formats {
			r.Formats = map[string]string{}
		} else if c.reg != nil {
			for k, v := range r.Formats {
				if shown[k] == v {
					delete(r.Formats, k)
					continue
				}
				shown[k] = v
			}
		}
		if !r.OK {
			rejected = true
		} else if o.ErrorsOnly {
			continue
		}
		if o.JSON {
			if err := enc.Encode(r); err != nil {
				return rejected, fmt.Errorf("encode result: %w", err)
			}
			continue
		}
		prefix := ""
		if r.Source != nil {
			prefix = *r.Source + ": "
		}
		r.WriteText(out, prefix)
		// Hints follow the entry they explain.
		if len(r.Hints) > 0 {
			out.Flush()
			for _, h := range r.Hints {
				fmt.Fprintf(hints, "%shint: %s\n", prefix, h)
			}
		}
	}
	return rejected, nil
}
