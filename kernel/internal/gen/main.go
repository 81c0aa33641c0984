// Command gen packs a kernel snapshot directory into the compressed blob
// that package kernel embeds (see Embedded). It runs from go generate:
//
//	go run ./internal/gen -src ../../shared/kernels/6.12 -out snapshot-6.12.bin
//
// Every snapshot file except the kernel image is stored; comment and blank
// lines of the build configuration are dropped, since the model reads unset
// options as "". In place of the image the blob gets the text table
// (kernel.FileTextTable): ENDBR64 entries and instruction starts computed
// from the image, about a tenth of its size.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

// files are the snapshot members, in blob order.
var files = []string{"version", "cpus", "config", "kallsyms", "kprobes_blacklist", "available_filter_functions", "btf"}

func main() { blob.Main("gen", pack) }

// pack reads the snapshot members of src.
func pack(src string) ([]blob.Member, error) {
	var members []blob.Member
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return nil, fmt.Errorf("reading snapshot: %w", err)
		}
		if name == "config" {
			b = stripConfig(b)
		}
		members = append(members, blob.Member{Name: name, Data: b})
	}
	m, err := kernel.LoadSnapshot(src)
	if err != nil {
		return nil, err
	}
	if !m.HasImage() {
		fmt.Fprintf(os.Stderr, "gen: %s has no vmlinuz; the blob gets no text table\n", src)
		return members, nil
	}
	table, err := m.TextTable()
	if err != nil {
		return nil, fmt.Errorf("text table: %w", err)
	}
	return append(members, blob.Member{Name: kernel.FileTextTable, Data: table}), nil
}

// stripConfig keeps only the CONFIG_X=value lines of a .config.
func stripConfig(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
