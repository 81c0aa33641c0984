package grammar

// SynthCode is a synthetic-event error code, one for each entry of the
// ERRORS table in the kernel's kernel/trace/trace_events_synth.c. Lines
// written to synthetic_events, and "s:" lines written to dynamic_events,
// report through these; the kernel logs them in error_log under
// SynthSubsys, with the caret at the first occurrence of the offending
// text in the command.
type SynthCode int

// The synthetic-event error codes, in the kernel's order.
const (
	SynthNone SynthCode = iota
	SynthBadName
	SynthInvalidCmd
	SynthInvalidDynCmd
	SynthEventExists
	SynthTooManyFields
	SynthIncompleteType
	SynthInvalidType
	SynthInvalidField
	SynthInvalidArraySpec
	numSynthCodes
)

// SynthSubsys is the error_log location of synthetic-event errors.
const SynthSubsys = "synthetic_events"

var synthCodeTable = [numSynthCodes]codeInfo{
	SynthNone:             {"NONE", "No error"},
	SynthBadName:          {"BAD_NAME", "Illegal name"},
	SynthInvalidCmd:       {"INVALID_CMD", "Command must be of the form: <name> field[;field] ..."},
	SynthInvalidDynCmd:    {"INVALID_DYN_CMD", "Command must be of the form: s or -:[synthetic/]<name> field[;field] ..."},
	SynthEventExists:      {"EVENT_EXISTS", "Event already exists"},
	SynthTooManyFields:    {"TOO_MANY_FIELDS", "Too many fields"},
	SynthIncompleteType:   {"INCOMPLETE_TYPE", "Incomplete type"},
	SynthInvalidType:      {"INVALID_TYPE", "Invalid type"},
	SynthInvalidField:     {"INVALID_FIELD", "Invalid field"},
	SynthInvalidArraySpec: {"INVALID_ARRAY_SPEC", "Invalid array specification"},
}

// Name is the code's kernel name without the SYNTH_ERR_ prefix.
func (c SynthCode) Name() string {
	if c < 0 || c >= numSynthCodes {
		return "UNKNOWN"
	}
	return synthCodeTable[c].name
}

func (c SynthCode) String() string { return c.Name() }

// Message is the code's error_log text.
func (c SynthCode) Message() string {
	if c < 0 || c >= numSynthCodes {
		return ""
	}
	return synthCodeTable[c].msg
}
