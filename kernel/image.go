package kernel

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
)

// textImage is the kernel text extracted from vmlinuz: the executable
// sections of the vmlinux ELF, addressed by their link-time virtual
// addresses shifted by delta (the KASLR slide seen in kallsyms; 0 for
// nokaslr snapshots).
type textImage struct {
	sections []imageSection // sorted by addr
	delta    uint64
	reserved []reservedSite // sorted by addr
	retSites []uint64       // return-thunk jumps, sorted
}

type imageSection struct {
	name string
	addr uint64 // run-time address (link address + delta)
	data []byte
}

// bytesAt returns the image bytes from addr to the end of its section.
func (t *textImage) bytesAt(addr uint64) ([]byte, bool) {
	i := sort.Search(len(t.sections), func(i int) bool { return t.sections[i].addr > addr })
	if i == 0 {
		return nil, false
	}
	s := t.sections[i-1]
	if addr-s.addr >= uint64(len(s.data)) {
		return nil, false
	}
	return s.data[addr-s.addr:], true
}

// sectionOf returns the name of the executable section holding addr.
func (t *textImage) sectionOf(addr uint64) string {
	i := sort.Search(len(t.sections), func(i int) bool { return t.sections[i].addr > addr })
	if i == 0 || addr-t.sections[i-1].addr >= uint64(len(t.sections[i-1].data)) {
		return ""
	}
	return t.sections[i-1].name
}

// loadImage decodes the kernel image once, on first use.
func (m *Model) loadImage() (*textImage, error) {
	m.imageOnce.Do(func() {
		if m.imageOpen == nil {
			m.imageErr = errors.New("no kernel image")
			return
		}
		raw, err := m.imageOpen()
		if err != nil {
			m.imageErr = m.errorf("reading %s: %w", FileImage, err)
			return
		}
		vmlinux, err := extractVmlinux(raw)
		if err != nil {
			m.imageErr = m.errorf("%s: %w", FileImage, err)
			return
		}
		img, f, err := parseVmlinux(vmlinux)
		if err != nil {
			m.imageErr = m.errorf("%s: %w", FileImage, err)
			return
		}
		// Align the image with kallsyms: _stext is the start of .text.
		if s := m.Symbols("", "_stext"); len(s) > 0 {
			for _, sec := range img.sections {
				if sec.name == ".text" {
					img.delta = s[0].Addr - sec.addr
				}
			}
			for i := range img.sections {
				img.sections[i].addr += img.delta
			}
		}
		img.reserved = m.reservedSites(f, img)
		img.retSites = returnSites(f, img)
		m.image = img
	})
	return m.image, m.imageErr
}

// ImageError reports why instruction-level checks are unavailable (nil when
// the image decoded). It decodes the image if that has not happened yet.
func (m *Model) ImageError() error {
	_, err := m.loadImage()
	return err
}

// HasImage reports whether the model has a kernel image to decode
// instructions from (without decoding it).
func (m *Model) HasImage() bool { return m.imageOpen != nil }

// extractVmlinux returns the decompressed vmlinux ELF of an x86 bzImage:
// the payload located by the setup header fields payload_offset and
// payload_length (boot protocol 2.08+), relative to the protected-mode code
// that follows the (setup_sects+1) real-mode sectors. A plain ELF is
// returned as is.
func extractVmlinux(img []byte) ([]byte, error) {
	if bytes.HasPrefix(img, []byte(elf.ELFMAG)) {
		return img, nil
	}
	if len(img) < 0x250 || string(img[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage (no HdrS setup header)")
	}
	if v := binary.LittleEndian.Uint16(img[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("boot protocol %#x predates payload_offset", v)
	}
	setupSects := int(img[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	off := uint64(setupSects+1)*512 + uint64(binary.LittleEndian.Uint32(img[0x248:]))
	n := uint64(binary.LittleEndian.Uint32(img[0x24c:]))
	if off+n > uint64(len(img)) || n < 8 {
		return nil, fmt.Errorf("payload [%#x,+%#x) outside the %d-byte image", off, n, len(img))
	}
	payload := img[off : off+n]
	// The build appends the decompressed size as a little-endian u32.
	size := int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	out, err := decompress(payload, size)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if !bytes.HasPrefix(out, []byte(elf.ELFMAG)) {
		return nil, errors.New("payload is not an ELF file")
	}
	return out, nil
}

// decompress inflates a kernel payload by its magic: gzip, xz, zstd or
// LZ4 legacy frames (the formats Debian and most distributions use).
func decompress(p []byte, size int) ([]byte, error) {
	if size <= 0 || size > 1<<30 {
		size = 64 << 20
	}
	switch {
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		zr.Multistream(false)
		return readAllSized(zr, size, "gzip")
	case bytes.HasPrefix(p, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		xr, err := xz.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		xr.SingleStream = true
		return readAllSized(xr, size, "xz")
	case bytes.HasPrefix(p, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(1 << 31), zstd.WithDecoderMaxMemory(1 << 31)}
		// Decoding the frame in one go into a buffer of the final size
		// spares the streaming decoder's window copies (the kernel's
		// zstd -22 window is up to 128 MiB): about half the time.
		if dec, err := zstd.NewReader(nil, opts...); err == nil {
			out, err := dec.DecodeAll(p, make([]byte, 0, size))
			dec.Close()
			if err == nil || len(out) >= size {
				return out, nil
			}
		}
		zr, err := zstd.NewReader(bytes.NewReader(p), opts...)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		return readAllSized(zr, size, "zstd")
	case bytes.HasPrefix(p, []byte{0x02, 0x21, 0x4c, 0x18}):
		return lz4Legacy(p, size)
	}
	return nil, fmt.Errorf("unknown compression (magic % x)", p[:min(len(p), 6)])
}

// readAllSized reads r up to its end. Trailing data after the compressed
// stream (the appended size) may make the reader fail once the expected
// size has been produced; that is not an error.
func readAllSized(r io.Reader, size int, what string) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := io.Copy(buf, r)
	if err != nil && buf.Len() < size {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return buf.Bytes(), nil
}

// lz4Legacy decodes the LZ4 legacy frame format the kernel's
// "lz4 -l" build uses: the magic, then blocks each preceded by their
// compressed length (u32 LE) and inflating to at most 8 MiB; a repeated
// magic starts a new frame, and the appended decompressed size ends the
// stream.
func lz4Legacy(p []byte, size int) ([]byte, error) {
	const magic = 0x184c2102
	const maxBlock = 8 << 20
	out := make([]byte, 0, size)
	block := make([]byte, maxBlock)
	for pos := 0; pos+4 <= len(p); {
		n := binary.LittleEndian.Uint32(p[pos:])
		pos += 4
		if n == magic {
			continue
		}
		if uint64(n) > uint64(len(p)-pos) {
			break // the appended size, or garbage after the stream
		}
		k, err := lz4.UncompressBlock(p[pos:pos+int(n)], block)
		if err != nil {
			if len(out) >= size {
				break
			}
			return nil, fmt.Errorf("lz4 block at %#x: %w", pos-4, err)
		}
		out = append(out, block[:k]...)
		pos += int(n)
	}
	if len(out) == 0 {
		return nil, errors.New("lz4: no data")
	}
	return out, nil
}

// parseVmlinux keeps the executable allocated sections of a vmlinux ELF
// and returns the ELF for reading its tables.
func parseVmlinux(b []byte) (*textImage, *elf.File, error) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("vmlinux: %w", err)
	}
	if f.Machine != elf.EM_X86_64 {
		return nil, nil, fmt.Errorf("vmlinux: machine %v: instruction decoding supports x86_64 only", f.Machine)
	}
	img := &textImage{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, nil, fmt.Errorf("vmlinux section %s: %w", s.Name, err)
		}
		img.sections = append(img.sections, imageSection{name: s.Name, addr: s.Addr, data: data})
	}
	if len(img.sections) == 0 {
		return nil, nil, errors.New("vmlinux: no executable sections")
	}
	sort.Slice(img.sections, func(i, j int) bool { return img.sections[i].addr < img.sections[j].addr })
	return img, f, nil
}
