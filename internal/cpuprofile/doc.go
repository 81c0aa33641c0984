// Package cpuprofile writes a CPU profile of a whole ktrace run
// (KTRACE_CPUPROFILE: where ktrace's own time goes, on the machine it
// traces).
package cpuprofile
