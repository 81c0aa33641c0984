package kernel

import (
	"testing"
)

func BenchmarkFuncsAll(b *testing.B) {
	m, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Funcs(nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fs, err := m.Funcs(nil)
		if err != nil || len(fs) < 50000 {
			b.Fatal(err, len(fs))
		}
	}
}
