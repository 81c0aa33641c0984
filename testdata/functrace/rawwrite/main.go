// rawwrite: issue raw write(2) calls on a file and print each result.
// Usage: rawwrite [-a|-t|-n] FILE CHUNK...
//
//	-t (default) open O_WRONLY|O_TRUNC, -a O_WRONLY|O_APPEND, -n O_WRONLY only.
//
// Each CHUNK is one write(2); escapes \n \t \0 \\ and \xHH are decoded.
// Prints "write 'CHUNK' = RET" (or "= -1 ERRNO"), then "close = 0".
// Used for the ktrace functrace goldens (testdata/functrace/session.sh).
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func unescape(s string) []byte {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b = append(b, c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case '0':
			b = append(b, 0)
		case '\\':
			b = append(b, '\\')
		case 'x':
			if i+2 < len(s) {
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err == nil {
					b = append(b, byte(v))
					i += 2
					continue
				}
			}
			b = append(b, '\\', 'x')
		default:
			b = append(b, '\\', s[i])
		}
	}
	return b
}

var names = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.ESRCH: "ESRCH",
	syscall.E2BIG: "E2BIG", syscall.EFAULT: "EFAULT", syscall.EBUSY: "EBUSY",
	syscall.EEXIST: "EEXIST", syscall.ENODEV: "ENODEV", syscall.EINVAL: "EINVAL",
	syscall.ENOSPC: "ENOSPC", syscall.ENOMEM: "ENOMEM", syscall.EOPNOTSUPP: "EOPNOTSUPP",
	syscall.EACCES: "EACCES", syscall.ERANGE: "ERANGE",
}

func errname(err error) string {
	if e, ok := err.(syscall.Errno); ok {
		if n, ok := names[e]; ok {
			return n
		}
		return fmt.Sprintf("errno%d", int(e))
	}
	return err.Error()
}

func main() {
	args := os.Args[1:]
	flags := syscall.O_WRONLY | syscall.O_TRUNC
	if len(args) > 0 && len(args[0]) == 2 && args[0][0] == '-' {
		switch args[0][1] {
		case 'a':
			flags = syscall.O_WRONLY | syscall.O_APPEND
		case 'n':
			flags = syscall.O_WRONLY
		}
		args = args[1:]
	}
	if len(args) < 1 {
		fmt.Println("usage: rawwrite [-a|-t|-n] FILE CHUNK...")
		os.Exit(2)
	}
	fd, err := syscall.Open(args[0], flags, 0)
	if err != nil {
		fmt.Printf("open = -1 %s\n", errname(err))
		os.Exit(1)
	}
	for _, a := range args[1:] {
		n, err := syscall.Write(fd, unescape(a))
		if err != nil {
			fmt.Printf("write '%s' = -1 %s\n", a, errname(err))
		} else {
			fmt.Printf("write '%s' = %d\n", a, n)
		}
	}
	if err := syscall.Close(fd); err != nil {
		fmt.Printf("close = -1 %s\n", errname(err))
	} else {
		fmt.Println("close = 0")
	}
}
