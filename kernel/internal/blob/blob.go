package blob

import (
	"bytes"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

const magic = "ktrace-snapshot 1\n"

// Member is one file of the snapshot.
type Member struct {
	Name string
	Data []byte // uncompressed
}

// Encode writes members into a blob. The encoding is deterministic.
func Encode(members []Member) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(8<<20))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	defer enc.Close()
	var out bytes.Buffer
	out.WriteString(magic)
	for _, m := range members {
		c := enc.EncodeAll(m.Data, nil)
		fmt.Fprintf(&out, "%s\n%d\n%d\n", m.Name, len(c), len(m.Data))
		out.Write(c)
	}
	return out.Bytes(), nil
}

// Archive is a parsed blob whose members are decompressed on demand.
type Archive struct {
	members map[string]compressed
}

type compressed struct {
	data   []byte
	rawLen int
}

// Parse indexes a blob without decompressing anything.
func Parse(b []byte) (*Archive, error) {
	if !bytes.HasPrefix(b, []byte(magic)) {
		return nil, fmt.Errorf("snapshot blob: bad header")
	}
	b = b[len(magic):]
	a := &Archive{members: map[string]compressed{}}
	for len(b) > 0 {
		var fields [3]string
		for i := range fields {
			j := bytes.IndexByte(b, '\n')
			if j < 0 {
				return nil, fmt.Errorf("snapshot blob: truncated member header")
			}
			fields[i], b = string(b[:j]), b[j+1:]
		}
		clen, err1 := strconv.Atoi(fields[1])
		rlen, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || clen < 0 || rlen < 0 || clen > len(b) {
			return nil, fmt.Errorf("snapshot blob: member %q: bad lengths %q %q", fields[0], fields[1], fields[2])
		}
		a.members[fields[0]] = compressed{data: b[:clen], rawLen: rlen}
		b = b[clen:]
	}
	return a, nil
}

// Has reports whether the blob holds member name.
func (a *Archive) Has(name string) bool {
	_, ok := a.members[name]
	return ok
}

// Read decompresses member name. A missing member is reported as an error
// wrapping ErrMissing (fs.ErrNotExist).
func (a *Archive) Read(name string) ([]byte, error) {
	m, ok := a.members[name]
	if !ok {
		return nil, fmt.Errorf("snapshot blob: %s: %w", name, ErrMissing)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(m.data, make([]byte, 0, m.rawLen))
	if err != nil {
		return nil, fmt.Errorf("snapshot blob: %s: %w", name, err)
	}
	if len(out) != m.rawLen {
		return nil, fmt.Errorf("snapshot blob: %s: decompressed %d bytes, want %d", name, len(out), m.rawLen)
	}
	return out, nil
}

// ErrMissing is returned for a member the blob does not hold.
var ErrMissing = fs.ErrNotExist
