// Command poll is the probe of poll(2) on tracefs files that ktrace's VM
// tests run: "poll [-I|-P|-IP] [-r] [-t MS] FILE" opens FILE read-only,
// reads it to its end first when -r is given (as a reader of a hist file
// resets its readiness), then waits in poll(2) for the events asked
// (POLLIN, POLLPRI or both) for at most MS milliseconds (default: no
// limit). It prints "revents=0xN" and exits 0 when poll reported the
// file, 1 when it timed out, 2 on a usage or system error.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	os.Exit(pollFile(os.Args[1:]))
}

// pollFile is the command; args are its arguments.
func pollFile(args []string) int {
	var events int16
	timeout, reset := -1, false
	for len(args) > 1 {
		switch args[0] {
		case "-I":
			events |= unix.POLLIN
		case "-P":
			events |= unix.POLLPRI
		case "-IP":
			events |= unix.POLLIN | unix.POLLPRI
		case "-r":
			reset = true
		case "-t":
			if len(args) < 3 {
				fmt.Fprintln(os.Stderr, "poll: -t needs milliseconds")
				return 2
			}
			n, err := strconv.Atoi(args[1])
			if err != nil {
				fmt.Fprintf(os.Stderr, "poll: bad timeout %q\n", args[1])
				return 2
			}
			timeout = n
			args = args[1:]
		default:
			fmt.Fprintf(os.Stderr, "poll: unknown flag %q\n", args[0])
			return 2
		}
		args = args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: poll [-I|-P|-IP] [-r] [-t MS] FILE")
		return 2
	}
	if events == 0 {
		events = unix.POLLIN
	}
	fd, err := syscall.Open(args[0], syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "poll: %v\n", err)
		return 2
	}
	defer syscall.Close(fd)
	if reset {
		buf := make([]byte, 4096)
		for {
			n, err := syscall.Read(fd, buf)
			if err != nil || n < len(buf) {
				break
			}
		}
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		n, err := unix.Poll(pfd, timeout)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "poll: %v\n", err)
			return 2
		}
		fmt.Printf("revents=%#x\n", uint16(pfd[0].Revents))
		if n == 0 {
			return 1
		}
		return 0
	}
}
