package kernel

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TextReader reads the running kernel's memory at kernel virtual
// addresses. The host model reads the instructions kprobes will see
// through it: the running text, with boot-time patching (sealed ENDBR64s,
// return thunks turned into "ret; int3") already applied, which no file on
// disk shows.
type TextReader interface {
	// ReadKernel fills p with the bytes at addr.
	ReadKernel(p []byte, addr uint64) error
	// Source says how the memory is read ("/proc/kcore", "BPF").
	Source() string
	Close() error
}

// OpenLiveText opens a reader of the running kernel's memory: /proc/kcore
// where it can be read (root with CAP_SYS_RAWIO and a kernel with
// CONFIG_PROC_KCORE; containers usually mask it), else a small BPF program
// that copies kernel memory with bpf_probe_read_kernel when run through
// BPF_PROG_TEST_RUN (CAP_BPF and CAP_PERFMON, Linux 5.10+). Both are read
// only; neither attaches anything.
func OpenLiveText() (TextReader, error) {
	k, kerr := openKcore(kcorePath)
	if kerr == nil {
		return k, nil
	}
	b, berr := openBPFText()
	if berr == nil {
		return b, nil
	}
	return nil, fmt.Errorf("reading the running kernel's text: %s: %v; BPF: %w", kcorePath, kerr, berr)
}

const kcorePath = "/proc/kcore"

// kcoreReader reads kernel memory through the PT_LOAD segments of
// /proc/kcore, an ELF core image of the kernel's address space.
type kcoreReader struct {
	f    *os.File
	segs []elf.ProgHeader
}

func openKcore(path string) (*kcoreReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("not an ELF core image: %w", err)
	}
	r := &kcoreReader{f: f}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			r.segs = append(r.segs, p.ProgHeader)
		}
	}
	if len(r.segs) == 0 {
		f.Close()
		return nil, errors.New("no memory segments")
	}
	return r, nil
}

func (r *kcoreReader) ReadKernel(p []byte, addr uint64) error {
	for _, s := range r.segs {
		if addr < s.Vaddr || addr+uint64(len(p)) > s.Vaddr+s.Filesz {
			continue
		}
		n, err := r.f.ReadAt(p, int64(s.Off+(addr-s.Vaddr)))
		if err != nil || n != len(p) {
			return fmt.Errorf("%s: reading %d bytes at %#x: %v", kcorePath, len(p), addr, err)
		}
		return nil
	}
	return fmt.Errorf("%s: %#x is in no memory segment", kcorePath, addr)
}

func (r *kcoreReader) Source() string { return kcorePath }
func (r *kcoreReader) Close() error   { return r.f.Close() }

// bpfTextChunk is how many bytes one run of the BPF reader copies.
const bpfTextChunk = 256

// bpfTextReader copies kernel memory with a raw-tracepoint program run by
// BPF_PROG_TEST_RUN: its context is the address, and it copies
// bpfTextChunk bytes from there into a one-element array map.
type bpfTextReader struct {
	mu   sync.Mutex
	buf  *ebpf.Map
	prog *ebpf.Program
}

func openBPFText() (*bpfTextReader, error) {
	buf, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_text", Type: ebpf.Array, KeySize: 4, ValueSize: bpfTextChunk, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("creating the copy buffer: %w", err)
	}
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, buf.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "fail"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, bpfTextChunk),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord),
		asm.FnProbeReadKernel.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, -1).WithSymbol("fail"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktrace_text", Type: ebpf.RawTracepoint, Instructions: ins, License: "GPL"})
	if err != nil {
		buf.Close()
		return nil, fmt.Errorf("loading the copy program: %w", err)
	}
	return &bpfTextReader{buf: buf, prog: prog}, nil
}

func (r *bpfTextReader) ReadKernel(p []byte, addr uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var chunk [bpfTextChunk]byte
	for done := 0; done < len(p); done += bpfTextChunk {
		a := addr + uint64(done)
		ret, err := r.prog.Run(&ebpf.RunOptions{Context: []uint64{a}})
		if err != nil {
			return fmt.Errorf("BPF: running the copy program: %w", err)
		}
		if ret != 0 {
			return fmt.Errorf("BPF: kernel memory at %#x is not readable (error %d)", a, int32(ret))
		}
		if err := r.buf.Lookup(uint32(0), &chunk); err != nil {
			return fmt.Errorf("BPF: reading the copy buffer: %w", err)
		}
		copy(p[done:], chunk[:])
	}
	return nil
}

func (r *bpfTextReader) Source() string { return "BPF (bpf_probe_read_kernel)" }

func (r *bpfTextReader) Close() error {
	return errors.Join(r.prog.Close(), r.buf.Close())
}

// liveText returns the reader of the running kernel's text, opened on
// first use, or nil when the model has none.
func (m *Model) liveText() TextReader {
	if m.liveOpen == nil {
		return nil
	}
	m.liveOnce.Do(func() {
		m.live, m.liveErr = m.liveOpen()
		if m.liveErr == nil {
			m.liveErr = m.checkLiveText(m.live)
			if m.liveErr != nil {
				m.live.Close()
				m.live = nil
			}
		}
		if m.liveErr != nil {
			m.addFact("kernel text", "unreadable", m.liveErr.Error())
		} else {
			m.addFact("kernel text", "running kernel", m.live.Source())
		}
	})
	return m.live
}

// LiveTextError reports why the running kernel's text could not be read
// (nil when it can, or when the model does not model the running kernel).
func (m *Model) LiveTextError() error {
	m.liveText()
	return m.liveErr
}

// checkLiveText makes sure the reader sees kernel text at _stext rather
// than the zeros /proc/kcore shows for memory it does not map (a kcore
// masked or restricted by a container runtime).
func (m *Model) checkLiveText(r TextReader) error {
	b := m.bounds()
	if !b.ok {
		return errors.New("kallsyms has no _stext/_etext")
	}
	var code [16]byte
	if err := r.ReadKernel(code[:], b.stext); err != nil {
		return err
	}
	if bytes.Equal(code[:], make([]byte, len(code))) {
		return fmt.Errorf("%s shows only zeros at _stext (%#x)", r.Source(), b.stext)
	}
	return nil
}

// liveBytes reads n bytes of the running text at addr.
func (m *Model) liveBytes(addr uint64, n int) ([]byte, bool) {
	r := m.liveText()
	if r == nil {
		return nil, false
	}
	p := make([]byte, n)
	if err := r.ReadKernel(p, addr); err != nil {
		return nil, false
	}
	return p, true
}

// addTextFact records which kernel text the model decides instruction
// rules from.
func (m *Model) addTextFact() {
	switch {
	case m.imageOpen != nil:
		m.addFact("kernel text", "image", "vmlinuz (decoded on first use)")
	case m.tableOpen != nil:
		m.addFact("kernel text", "text table", "computed from the snapshot's image when it was built")
	case m.liveOpen != nil:
		// Recorded when first read (liveText).
	default:
		m.addFact("kernel text", "none", "instruction boundaries and ENDBR64 are not checked")
	}
}

// TextKnown reports whether the model decides ENDBR64 and instruction
// boundaries from real kernel text (an image, the text table computed
// from one, or the running kernel's) rather than from a guess.
func (m *Model) TextKnown() bool {
	return m.imageOpen != nil || m.tableOpen != nil || m.liveText() != nil
}
