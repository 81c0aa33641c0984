package export

import (
	"fmt"
	"io"

	"github.com/ktrace-dev/ktrace/record"
)

// RecordCounts reads a recording's counters (record.Options.Counters) as
// the exporter's metrics take them.
func RecordCounts(read func() (record.Counts, error)) CountsFunc {
	return func() (Counts, error) {
		c, err := read()
		if err != nil {
			return Counts{}, err
		}
		out := Counts{Undecodable: c.Undecodable}
		for _, e := range c.Events {
			out.Events = append(out.Events, EventCount{Name: e.Name, Hits: e.Hits, Misses: e.Misses})
		}
		return out, nil
	}
}

// WriteText writes the exporter's line of `ktrace record`'s summary, and
// the last export error.
func (s Stats) WriteText(w io.Writer) {
	fmt.Fprintf(w, "ktrace: export: %d log records exported, %d dropped (%d queue full, %d export failed)\n",
		s.Exported, s.Dropped(), s.QueueFull, s.Failed)
	if s.LastErr != nil {
		fmt.Fprintf(w, "ktrace: export: last error: %v\n", s.LastErr)
	}
}
