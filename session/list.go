package session

import "github.com/ktrace-dev/ktrace/events"

// Entry is one event of a session as `ktrace ls --output json` lists it.
type Entry struct {
	Group   string   `json:"group"`
	Name    string   `json:"name"`
	ID      int      `json:"id"`
	Kind    string   `json:"kind"`
	Enabled bool     `json:"enabled"`
	Probes  []string `json:"probes"`
}

// Entries lists reg's events, each with its probe lines.
func Entries(reg *events.Registry) []Entry {
	list := []Entry{}
	for _, ev := range reg.Events() {
		e := Entry{Group: ev.Group, Name: ev.Name, ID: ev.ID, Kind: ev.Kind.String(), Enabled: ev.Enabled, Probes: []string{}}
		for _, p := range ev.Probes {
			e.Probes = append(e.Probes, p.Line)
		}
		list = append(list, e)
	}
	return list
}

// Formats are the format files of the events names name (as Find takes
// them), by GROUP/EVENT, and those keys in the order of names.
func Formats(reg *events.Registry, names []string) (formats map[string]string, order []string, err error) {
	formats = map[string]string{}
	for _, name := range names {
		ev, err := Find(reg, name)
		if err != nil {
			return nil, nil, err
		}
		key := ev.Group + "/" + ev.Name
		formats[key] = ev.Format()
		order = append(order, key)
	}
	return formats, order, nil
}
