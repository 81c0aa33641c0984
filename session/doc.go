// Package session is ktrace's session store: the events `ktrace add`
// builds up, kept between invocations in a plain text file. The file is
// the dynamic_events readback (one probe per line, re-creatable by writing
// it back) followed by one "#enabled GROUP/EVENT" line per enabled event;
// the kernel drops everything after '#', so the file can be written to a
// real dynamic_events as is. Verbs that change a session hold an flock on
// FILE.lock from their read to their save, and a save replaces the file
// by an atomic rename, so concurrent verbs lose nothing and readers see a
// whole file.
package session
