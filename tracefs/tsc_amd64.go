package tracefs

// haveTSC: the machine has a time stamp counter (x86-tsc).
const haveTSC = true

// readTSC is RDTSC.
func readTSC() uint64
