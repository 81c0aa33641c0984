// Package blob is the container format of the kernel snapshot compiled into
// ktrace: a header line followed by named members, each compressed
// separately with zstd so that a model can decompress its symbol files
// without touching the several-megabyte BTF member.
//
// Layout:
//
//	"ktrace-snapshot 1\n"
//	repeated: NAME "\n" COMPRESSED-LEN "\n" RAW-LEN "\n" COMPRESSED-BYTES
package blob
