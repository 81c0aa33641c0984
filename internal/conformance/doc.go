// Package conformance runs ktrace's conformance corpus: probe-definition
// lines whose outcome (errno, error_log entry, readback, format files) is
// recorded from the real pinned kernels as golden files, and against which
// ktrace's emulation is compared.
//
// Corpus files are testdata/conformance/*.jsonl (every name not starting
// with "golden-"), one Entry per line. The goldens are
// testdata/conformance/golden-<kernel>.jsonl, one Result per entry that
// applies to that kernel, in corpus file order then entry order.
package conformance
