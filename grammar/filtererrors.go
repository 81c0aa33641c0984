package grammar

// FilterCode is an event-filter error code, one for each entry of the
// ERRORS table in the kernel's kernel/trace/trace_events_filter.c. Filters
// (events/GROUP/EVENT/filter, a group's filter and the "if" part of
// triggers) report through these; the kernel logs them in error_log under
// FilterSubsys. The table has the newest release's entries; an older
// release simply never reports the codes it lacks (see Dialect.Filter*).
type FilterCode int

// The filter error codes, in the kernel's order.
const (
	FiltNone FilterCode = iota
	FiltInvalidOp
	FiltTooManyOpen
	FiltTooManyClose
	FiltMissingQuote
	FiltMissingBraceOpen
	FiltMissingBraceClose
	FiltOperandTooLong
	FiltExpectString
	FiltExpectDigit
	FiltIllegalFieldOp
	FiltFieldNotFound
	FiltIllegalIntval
	FiltBadSubsysFilter
	FiltTooManyPreds
	FiltInvalidFilter
	FiltInvalidCPUList
	FiltIPFieldOnly
	FiltInvalidValue
	FiltNoFunction
	FiltErrno
	FiltNoFilter
	numFilterCodes
)

// FilterSubsys is the error_log location of filter errors.
const FilterSubsys = "event filter parse error"

var filterCodeTable = [numFilterCodes]codeInfo{
	FiltNone:              {"NONE", "No error"},
	FiltInvalidOp:         {"INVALID_OP", "Invalid operator"},
	FiltTooManyOpen:       {"TOO_MANY_OPEN", "Too many '('"},
	FiltTooManyClose:      {"TOO_MANY_CLOSE", "Too few '('"},
	FiltMissingQuote:      {"MISSING_QUOTE", "Missing matching quote"},
	FiltMissingBraceOpen:  {"MISSING_BRACE_OPEN", "Missing '{'"},
	FiltMissingBraceClose: {"MISSING_BRACE_CLOSE", "Missing '}'"},
	FiltOperandTooLong:    {"OPERAND_TOO_LONG", "Operand too long"},
	FiltExpectString:      {"EXPECT_STRING", "Expecting string field"},
	FiltExpectDigit:       {"EXPECT_DIGIT", "Expecting numeric field"},
	FiltIllegalFieldOp:    {"ILLEGAL_FIELD_OP", "Illegal operation for field type"},
	FiltFieldNotFound:     {"FIELD_NOT_FOUND", "Field not found"},
	FiltIllegalIntval:     {"ILLEGAL_INTVAL", "Illegal integer value"},
	FiltBadSubsysFilter:   {"BAD_SUBSYS_FILTER", "Couldn't find or set field in one of a subsystem's events"},
	FiltTooManyPreds:      {"TOO_MANY_PREDS", "Too many terms in predicate expression"},
	FiltInvalidFilter:     {"INVALID_FILTER", "Meaningless filter expression"},
	FiltInvalidCPUList:    {"INVALID_CPULIST", "Invalid cpulist"},
	FiltIPFieldOnly:       {"IP_FIELD_ONLY", "Only 'ip' field is supported for function trace"},
	FiltInvalidValue:      {"INVALID_VALUE", "Invalid value (did you forget quotes)?"},
	FiltNoFunction:        {"NO_FUNCTION", "Function not found"},
	FiltErrno:             {"ERRNO", "Error"},
	FiltNoFilter:          {"NO_FILTER", "No filter found"},
}

// Name is the code's kernel name without the FILT_ERR_ prefix.
func (c FilterCode) Name() string {
	if c < 0 || c >= numFilterCodes {
		return "UNKNOWN"
	}
	return filterCodeTable[c].name
}

func (c FilterCode) String() string { return c.Name() }

// Message is the code's error_log and filter-file text.
func (c FilterCode) Message() string {
	if c < 0 || c >= numFilterCodes {
		return ""
	}
	return filterCodeTable[c].msg
}
