package blob

import (
	"flag"
	"fmt"
	"os"
)

// Main is the main function of the commands that pack a kernel snapshot
// directory into a blob from go generate (gen, tpgen): it reads the -src
// and -out flags, calls pack with the directory, and writes the blob of
// the members pack returns to the file. A failure is reported as
// "NAME: ERROR" and exits with status 1 (2 for a bad command line).
func Main(name string, pack func(src string) ([]Member, error)) {
	src := flag.String("src", "", "snapshot directory")
	out := flag.String("out", "", "blob to write")
	flag.Parse()
	if *src == "" || *out == "" {
		fmt.Fprintf(os.Stderr, "usage: %s -src DIR -out FILE\n", name)
		os.Exit(2)
	}
	if err := write(*src, *out, pack); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s -> %s\n", name, *src, *out)
}

func write(src, out string, pack func(src string) ([]Member, error)) error {
	members, err := pack(src)
	if err != nil {
		return err
	}
	data, err := Encode(members)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("writing blob: %w", err)
	}
	return nil
}
