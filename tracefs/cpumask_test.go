package tracefs

import (
	"errors"
	"syscall"
	"testing"
)

// TestCPUMaskWrites: tracing_cpumask writes and readback as measured on
// 6.12 with two CPUs and 6.1 with one (the kernel's bitmap_parse and
// "%*pb"), and wider masks from the same rules.
func TestCPUMaskWrites(t *testing.T) {
	for _, c := range []struct {
		nbits int
		in    string
		want  string // readback, or the errno's name
	}{
		{2, "2\n", "2"}, {2, "2", "2"}, {2, "0\n", "0"}, {2, "3\n", "3"},
		{2, "ff\n", "EOVERFLOW"}, {2, "4\n", "EOVERFLOW"}, {2, "1,2\n", "EOVERFLOW"},
		{2, "zz\n", "EINVAL"}, {2, "0x2\n", "EINVAL"}, {2, "-1\n", "EINVAL"},
		{2, "\n", "0"}, {2, " 2\n", "2"}, {2, "00000003\n", "3"}, {2, "2 \n", "2"}, {2, "1 \n", "1"},
		{2, "1,00000001\n", "EOVERFLOW"}, {2, "fffffffff\n", "EOVERFLOW"}, {2, "2 3\n", "EOVERFLOW"},
		{2, "3,\n", "3"}, {2, ",3\n", "3"}, {2, "00000000,00000002\n", "EOVERFLOW"},
		{1, "3,\n", "EOVERFLOW"}, {1, ",3\n", "EOVERFLOW"}, {1, "1 \n", "1"},
		{8, "3\n", "03"}, {8, "ff\n", "ff"},
		{64, "1,00000001\n", "00000001,00000001"}, {64, "ffffffff,ffffffff\n", "ffffffff,ffffffff"},
		{36, "f,0\n", "f,00000000"}, {36, "1f,0\n", "EOVERFLOW"},
	} {
		m, err := parseCPUMask(c.in, c.nbits)
		got := ""
		switch {
		case errors.Is(err, syscall.EOVERFLOW):
			got = "EOVERFLOW"
		case errors.Is(err, syscall.EINVAL):
			got = "EINVAL"
		case err != nil:
			got = err.Error()
		default:
			got = m.format(c.nbits)
		}
		if got != c.want {
			t.Errorf("%d CPUs, write %q: got %s, want %s", c.nbits, c.in, got, c.want)
		}
	}
	if got := fullCPUMask(2).format(2); got != "3" {
		t.Errorf("full mask of 2 CPUs reads %q, want 3", got)
	}
}

// TestCPUMaskRecords: an entry on a CPU outside tracing_cpumask is not
// recorded, in that buffer only.
func TestCPUMaskRecords(t *testing.T) {
	f := New(nil, Options{CPUs: 2})
	if _, err := f.writeCPUMask([]byte("2\n")); err != nil {
		t.Fatal(err)
	}
	if f.RecordTask(1, 10, "a", []byte(" [000] ..... 1.000000: x")) {
		t.Error("an entry of CPU 0 was recorded with tracing_cpumask 2")
	}
	if !f.RecordTask(2, 10, "a", []byte(" [001] ..... 1.000001: y")) {
		t.Error("an entry of CPU 1 was dropped with tracing_cpumask 2")
	}
	if got := f.cpumaskText(); got != "2\n" {
		t.Errorf("tracing_cpumask reads %q", got)
	}
}
