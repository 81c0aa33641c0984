// Command workload is the deterministic load ktrace's VM tests trace. It
// makes the same system calls with the same arguments on every run, so
// that the kernel's own tracer and ktrace record, attached to the same
// functions at the same time, must report the same event bodies:
//
//	for each round (default 3):
//	  openat(AT_FDCWD, "/tmp/ktrace-wl/a.txt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644)
//	  write(fd, "hello, ktrace\n", 14)
//	  openat(AT_FDCWD, "/tmp/ktrace-wl/a.txt", O_RDONLY|O_CLOEXEC)
//	  read(fd, buf, 90)
//	  openat(AT_FDCWD, "/tmp/ktrace-wl/missing", O_RDONLY|O_CLOEXEC)  (ENOENT)
//	then, into a pipe (pipe2(O_CLOEXEC)):
//	  write(wfd, 5000 'x' bytes, 5000)           (no NUL in 4096 bytes)
//	  write(wfd, 4095 'y' bytes and a NUL, 4096) (the NUL is the 4096th byte)
//
// "workload open N" instead opens the missing file N times and prints the
// mean time per open in nanoseconds, the load of the per-hit overhead
// benchmark.
//
// Usage: workload [ROUNDS] | workload open N
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

const (
	dir     = "/tmp/ktrace-wl"
	payload = "hello, ktrace\n"
	readLen = 90
)

func main() {
	if len(os.Args) == 3 && (os.Args[1] == "open" || os.Args[1] == "getppid") {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "workload: bad count %q\n", os.Args[2])
			os.Exit(2)
		}
		if os.Args[1] == "getppid" {
			getppidLoop(n)
			return
		}
		openLoop(n)
		return
	}
	rounds := 3
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "workload: bad round count %q\n", os.Args[1])
			os.Exit(2)
		}
		rounds = n
	}
	if err := syscall.Mkdir(dir, 0o755); err != nil && err != syscall.EEXIST {
		fail("mkdir", err)
	}
	buf := make([]byte, readLen)
	for i := 0; i < rounds; i++ {
		fd, err := syscall.Open(dir+"/a.txt", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			fail("open for writing", err)
		}
		if _, err := syscall.Write(fd, []byte(payload)); err != nil {
			fail("write", err)
		}
		syscall.Close(fd)
		fd, err = syscall.Open(dir+"/a.txt", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fail("open for reading", err)
		}
		if _, err := syscall.Read(fd, buf); err != nil {
			fail("read", err)
		}
		syscall.Close(fd)
		if _, err := syscall.Open(dir+"/missing", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != syscall.ENOENT {
			fail("open of a missing file", err)
		}
	}
	if rounds > 0 {
		longStrings()
	}
}

// longStrings writes two buffers into a pipe, for the uprobe tests of
// strings near the kernel's MAX_STRING_SIZE (4096): one without a NUL in
// its first 4096 bytes, one whose NUL is its 4096th byte.
func longStrings() {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		fail("pipe2", err)
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	exact := make([]byte, 4096)
	for i := range exact[:4095] {
		exact[i] = 'y'
	}
	for _, b := range [][]byte{long, exact} {
		if _, err := syscall.Write(p[1], b); err != nil {
			fail("write to the pipe", err)
		}
	}
	syscall.Close(p[0])
	syscall.Close(p[1])
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "workload: %s: %v\n", what, err)
	os.Exit(1)
}

// openLoop opens a missing file n times and prints ns per open.
// getppidLoop calls getppid(2) n times and prints the mean time per call:
// the cheapest system call, so a probe's cost on it is nearly all probe.
func getppidLoop(n int) {
	start := time.Now()
	for i := 0; i < n; i++ {
		syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
	}
	fmt.Printf("%d ns/op\n", time.Since(start).Nanoseconds()/int64(n))
}

func openLoop(n int) {
	start := time.Now()
	for i := 0; i < n; i++ {
		syscall.Open(dir+"/missing", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	fmt.Printf("%d ns/op\n", time.Since(start).Nanoseconds()/int64(n))
}
