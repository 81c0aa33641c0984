// Package version tells which ktrace is running: the module version and
// the VCS revision it was built from, as the Go toolchain recorded them in
// the binary (what `ktrace --version` prints).
package version
