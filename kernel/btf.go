package kernel

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// ErrNoBTF is returned by FuncProto when the model has no BTF.
var ErrNoBTF = errors.New("kernel has no BTF")

// BTF returns the kernel's BTF, parsed on first use (several MB, so the
// symbol-only path never pays for it). It returns nil when the model has no
// BTF or it cannot be parsed; BTFError tells which.
func (m *Model) BTF() *btf.Spec {
	m.loadBTF()
	return m.btfSpec
}

// BTFError returns why BTF() is nil: ErrNoBTF or the parse error.
func (m *Model) BTFError() error {
	m.loadBTF()
	return m.btfErr
}

func (m *Model) loadBTF() {
	m.btfOnce.Do(func() {
		if m.btfOpen == nil {
			m.btfErr = ErrNoBTF
			return
		}
		raw, err := m.btfOpen()
		if err != nil {
			m.btfErr = m.errorf("reading %s: %w", FileBTF, err)
			return
		}
		spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
		if err != nil {
			m.btfErr = m.errorf("parsing %s: %w", FileBTF, err)
			return
		}
		m.btfSpec = spec
	})
}

// FuncProto returns the BTF function named name and its prototype, as the
// kernel's BTF argument support looks it up (the BTF_KIND_FUNC of that name
// with the lowest type ID).
//
// Every probe line with BTF arguments asks for its function, so results
// (found or not) are remembered per name, up to funcProtoCacheMax names.
func (m *Model) FuncProto(name string) (*btf.Func, *btf.FuncProto, error) {
	if v, ok := m.protoCache.Load(name); ok {
		r := v.(*funcProtoResult)
		return r.fn, r.proto, r.err
	}
	fn, proto, err := m.funcProto(name)
	if m.protoCacheLen.Load() < funcProtoCacheMax {
		if _, loaded := m.protoCache.LoadOrStore(name, &funcProtoResult{fn, proto, err}); !loaded {
			m.protoCacheLen.Add(1)
		}
	}
	return fn, proto, err
}

// funcProtoCacheMax bounds the FuncProto cache: names come from user
// input, and a long-running ktrace (a FUSE mount) must not grow without
// limit.
const funcProtoCacheMax = 1 << 14

type funcProtoResult struct {
	fn    *btf.Func
	proto *btf.FuncProto
	err   error
}

// funcProto is FuncProto without the cache.
func (m *Model) funcProto(name string) (*btf.Func, *btf.FuncProto, error) {
	spec := m.BTF()
	if spec == nil {
		return nil, nil, m.btfErr
	}
	types, err := spec.AnyTypesByName(name)
	if err != nil {
		return nil, nil, fmt.Errorf("BTF function %q: %w", name, err)
	}
	// The kernel scans type IDs in order and takes the first FUNC; static
	// functions of the same name in different files can each have one.
	var best *btf.Func
	var bestID btf.TypeID
	for _, t := range types {
		fn, ok := t.(*btf.Func)
		if !ok {
			continue
		}
		id, err := spec.TypeID(fn)
		if err != nil {
			continue
		}
		if best == nil || id < bestID {
			best, bestID = fn, id
		}
	}
	if best == nil {
		return nil, nil, fmt.Errorf("BTF function %q: %w", name, btf.ErrNotFound)
	}
	proto, ok := best.Type.(*btf.FuncProto)
	if !ok {
		return nil, nil, fmt.Errorf("BTF function %q: type %v is not a prototype", name, best.Type)
	}
	return best, proto, nil
}
