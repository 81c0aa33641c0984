package readypipe

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// line is what a ready copy writes.
const line = "ready\n"

// Report writes the ready line on the inherited descriptor fd and closes
// it; false when fd is no descriptor.
func Report(fd uintptr) bool {
	f := os.NewFile(fd, "ready")
	if f == nil {
		return false
	}
	f.WriteString(line)
	f.Close()
	return true
}

// Wait reads the first line the started copy writes on r, the read end
// of the pipe: nil when it is the ready line, else an error quoting what
// was read (nothing when the copy exited or closed the pipe first) and
// the read's error.
func Wait(r io.Reader) error {
	got, err := bufio.NewReader(r).ReadString('\n')
	if got == line {
		return nil
	}
	return fmt.Errorf("%q, %v", got, err)
}
