package grammar

import (
	"fmt"
	"syscall"
)

// Code is a probe-definition error code, one for each entry of the
// kernel's ERRORS table in kernel/trace/trace_probe.h. Every part of ktrace
// that rejects a line reports one of these codes; the message text comes from
// the table below, optionally overridden per kernel release by the dialect
// table (see Dialect.Message).
type Code int

// The error codes, in the kernel's (alphabetical) order.
const (
	ErrNone Code = iota
	ErrArgIdx2Big
	ErrArgs2Long
	ErrArgNameTooLong
	ErrArgTooLong
	ErrArrayNoClose
	ErrArrayTooBig
	ErrBadAddrSuffix
	ErrBadArgName
	ErrBadArgNum
	ErrBadArrayNum
	ErrBadArraySuffix
	ErrBadAttachArg
	ErrBadAttachEvent
	ErrBadBitfield
	ErrBadBTFTid
	ErrBadDerefOffs
	ErrBadEventName
	ErrBadFetchArg
	ErrBadFileOffs
	ErrBadGroupName
	ErrBadHyphen
	ErrBadImm
	ErrBadInsnBndry
	ErrBadMaxact
	ErrBadMaxactType
	ErrBadMemAddr
	ErrBadProbeAddr
	ErrBadRefcnt
	ErrBadRefcntSuffix
	ErrBadRegName
	ErrBadRetprobe
	ErrBadStackNum
	ErrBadString
	ErrBadSymstring
	ErrBadTPName
	ErrBadType
	ErrBadType4Str
	ErrBadUprobeOffs
	ErrBadVar
	ErrBadVarArgs
	ErrCommCantDeref
	ErrDerefNeedBrace
	ErrDerefOpenBrace
	ErrDiffArgType
	ErrDiffProbeType
	ErrDoubleArgs
	ErrEventExist
	ErrEventTooBig
	ErrEventTooLong
	ErrFailRegProbe
	ErrFileNotFound
	ErrFileOnKprobe
	ErrGroupTooLong
	ErrImmstrNoClose
	ErrMaxactTooBig
	ErrNeedStringType
	ErrNofentryArgs
	ErrNonUniqSymbol
	ErrNosupBTFArg
	ErrNosupDatArg
	ErrNosupPercpu
	ErrNoArgBody
	ErrNoArgName
	ErrNoBTFArg
	ErrNoBTFEntry
	ErrNoBTFField
	ErrNoEPFilter
	ErrNoEventField
	ErrNoEventInfo
	ErrNoEventName
	ErrNoGroupName
	ErrNoPtrStrct
	ErrNoRegularFile
	ErrNoRetval
	ErrNoTracepoint
	ErrRefcntOpenBrace
	ErrRetvalOnProbe
	ErrSameProbe
	ErrSymOnUprobe
	ErrTooManyArgs
	ErrTooManyEargs
	ErrTooManyNested
	ErrTooManyOps
	ErrTypecastBadArrow
	ErrTypecastNotAligned
	ErrTypecastNotEvent
	ErrTypecastReqField
	ErrTypecastSymOffset
	ErrUsedArgName
	numCodes
)

// codeInfo is one row of the error table: the kernel's symbolic name and the
// message of the newest upstream kernel. Older spellings live in the dialect
// table.
type codeInfo struct {
	name string
	msg  string
}

var codeTable = [numCodes]codeInfo{
	ErrNone:               {"NONE", ""},
	ErrArgIdx2Big:         {"ARGIDX_2BIG", "$argN index is too big"},
	ErrArgs2Long:          {"ARGS_2LONG", "$arg* failed because the argument list is too long"},
	ErrArgNameTooLong:     {"ARG_NAME_TOO_LONG", "Argument name is too long"},
	ErrArgTooLong:         {"ARG_TOO_LONG", "Argument expression is too long"},
	ErrArrayNoClose:       {"ARRAY_NO_CLOSE", "Array is not closed"},
	ErrArrayTooBig:        {"ARRAY_TOO_BIG", "Array number is too big"},
	ErrBadAddrSuffix:      {"BAD_ADDR_SUFFIX", "Invalid probed address suffix"},
	ErrBadArgName:         {"BAD_ARG_NAME", "Argument name must follow the same rules as C identifiers"},
	ErrBadArgNum:          {"BAD_ARG_NUM", "Invalid argument number"},
	ErrBadArrayNum:        {"BAD_ARRAY_NUM", "Invalid array size"},
	ErrBadArraySuffix:     {"BAD_ARRAY_SUFFIX", "Array has wrong suffix"},
	ErrBadAttachArg:       {"BAD_ATTACH_ARG", "Attached event does not have this field"},
	ErrBadAttachEvent:     {"BAD_ATTACH_EVENT", "Attached event does not exist"},
	ErrBadBitfield:        {"BAD_BITFIELD", "Invalid bitfield"},
	ErrBadBTFTid:          {"BAD_BTF_TID", "Failed to get BTF type info."},
	ErrBadDerefOffs:       {"BAD_DEREF_OFFS", "Invalid dereference offset"},
	ErrBadEventName:       {"BAD_EVENT_NAME", "Event name must follow the same rules as C identifiers"},
	ErrBadFetchArg:        {"BAD_FETCH_ARG", "Invalid fetch argument"},
	ErrBadFileOffs:        {"BAD_FILE_OFFS", "Invalid file offset value"},
	ErrBadGroupName:       {"BAD_GROUP_NAME", "Group name must follow the same rules as C identifiers"},
	ErrBadHyphen:          {"BAD_HYPHEN", "Failed to parse single hyphen. Forgot '>'?"},
	ErrBadImm:             {"BAD_IMM", "Invalid immediate value"},
	ErrBadInsnBndry:       {"BAD_INSN_BNDRY", "Probe point is not an instruction boundary"},
	ErrBadMaxact:          {"BAD_MAXACT", "Invalid maxactive number"},
	ErrBadMaxactType:      {"BAD_MAXACT_TYPE", "Maxactive is only for function exit"},
	ErrBadMemAddr:         {"BAD_MEM_ADDR", "Invalid memory address"},
	ErrBadProbeAddr:       {"BAD_PROBE_ADDR", "Invalid probed address or symbol"},
	ErrBadRefcnt:          {"BAD_REFCNT", "Invalid reference counter offset"},
	ErrBadRefcntSuffix:    {"BAD_REFCNT_SUFFIX", "Reference counter has wrong suffix"},
	ErrBadRegName:         {"BAD_REG_NAME", "Invalid register name"},
	ErrBadRetprobe:        {"BAD_RETPROBE", "Retprobe address must be an function entry"},
	ErrBadStackNum:        {"BAD_STACK_NUM", "Invalid stack number"},
	ErrBadString:          {"BAD_STRING", "String accepts only memory argument"},
	ErrBadSymstring:       {"BAD_SYMSTRING", "Symbol String doesn't accept data/userdata"},
	ErrBadTPName:          {"BAD_TP_NAME", "Invalid character in tracepoint name"},
	ErrBadType:            {"BAD_TYPE", "Unknown type is specified"},
	ErrBadType4Str:        {"BAD_TYPE4STR", "This type does not fit for string."},
	ErrBadUprobeOffs:      {"BAD_UPROBE_OFFS", "Invalid uprobe offset"},
	ErrBadVar:             {"BAD_VAR", "Invalid $-variable specified"},
	ErrBadVarArgs:         {"BAD_VAR_ARGS", "$arg* must be an independent parameter without name etc."},
	ErrCommCantDeref:      {"COMM_CANT_DEREF", "$comm can not be dereferenced"},
	ErrDerefNeedBrace:     {"DEREF_NEED_BRACE", "Dereference needs a brace"},
	ErrDerefOpenBrace:     {"DEREF_OPEN_BRACE", "Dereference brace is not closed"},
	ErrDiffArgType:        {"DIFF_ARG_TYPE", "Argument type or name is different from existing probe"},
	ErrDiffProbeType:      {"DIFF_PROBE_TYPE", "Probe type is different from existing probe"},
	ErrDoubleArgs:         {"DOUBLE_ARGS", "$arg* can be used only once in the parameters"},
	ErrEventExist:         {"EVENT_EXIST", "Given group/event name is already used by another event"},
	ErrEventTooBig:        {"EVENT_TOO_BIG", "Event too big (too many fields?)"},
	ErrEventTooLong:       {"EVENT_TOO_LONG", "Event name is too long"},
	ErrFailRegProbe:       {"FAIL_REG_PROBE", "Failed to register probe event"},
	ErrFileNotFound:       {"FILE_NOT_FOUND", "Failed to find the given file"},
	ErrFileOnKprobe:       {"FILE_ON_KPROBE", "File offset is not available for kernel probes"},
	ErrGroupTooLong:       {"GROUP_TOO_LONG", "Group name is too long"},
	ErrImmstrNoClose:      {"IMMSTR_NO_CLOSE", "String is not closed with '\"'"},
	ErrMaxactTooBig:       {"MAXACT_TOO_BIG", "Maxactive is too big"},
	ErrNeedStringType:     {"NEED_STRING_TYPE", "$comm and immediate-string only accepts string type"},
	ErrNofentryArgs:       {"NOFENTRY_ARGS", "$arg* can be used only on function entry or exit"},
	ErrNonUniqSymbol:      {"NON_UNIQ_SYMBOL", "The symbol is not unique"},
	ErrNosupBTFArg:        {"NOSUP_BTFARG", "BTF is not available or not supported"},
	ErrNosupDatArg:        {"NOSUP_DAT_ARG", "Non pointer structure/union argument is not supported."},
	ErrNosupPercpu:        {"NOSUP_PERCPU", "Per-cpu variable access is only for kernel probes"},
	ErrNoArgBody:          {"NO_ARG_BODY", "No argument expression"},
	ErrNoArgName:          {"NO_ARG_NAME", "Argument name is not specified"},
	ErrNoBTFArg:           {"NO_BTFARG", "This variable is not found at this probe point"},
	ErrNoBTFEntry:         {"NO_BTF_ENTRY", "No BTF entry for this probe point"},
	ErrNoBTFField:         {"NO_BTF_FIELD", "This field is not found."},
	ErrNoEPFilter:         {"NO_EP_FILTER", "No filter rule after 'if'"},
	ErrNoEventField:       {"NO_EVENT_FIELD", "This event field is not found."},
	ErrNoEventInfo:        {"NO_EVENT_INFO", "This requires both group and event name to attach"},
	ErrNoEventName:        {"NO_EVENT_NAME", "Event name is not specified"},
	ErrNoGroupName:        {"NO_GROUP_NAME", "Group name is not specified"},
	ErrNoPtrStrct:         {"NO_PTR_STRCT", "This is not a pointer to union/structure."},
	ErrNoRegularFile:      {"NO_REGULAR_FILE", "Not a regular file"},
	ErrNoRetval:           {"NO_RETVAL", "This function returns 'void' type"},
	ErrNoTracepoint:       {"NO_TRACEPOINT", "Tracepoint is not found"},
	ErrRefcntOpenBrace:    {"REFCNT_OPEN_BRACE", "Reference counter brace is not closed"},
	ErrRetvalOnProbe:      {"RETVAL_ON_PROBE", "$retval is not available on probe"},
	ErrSameProbe:          {"SAME_PROBE", "There is already the exact same probe event"},
	ErrSymOnUprobe:        {"SYM_ON_UPROBE", "Symbol is not available with uprobe"},
	ErrTooManyArgs:        {"TOO_MANY_ARGS", "Too many arguments are specified"},
	ErrTooManyEargs:       {"TOO_MANY_EARGS", "Too many entry arguments specified"},
	ErrTooManyNested:      {"TOO_MANY_NESTED", "Too many nested typecasts/dereferences"},
	ErrTooManyOps:         {"TOO_MANY_OPS", "Dereference is too much nested"},
	ErrTypecastBadArrow:   {"TYPECAST_BAD_ARROW", "Typecast field option does not support -> operator"},
	ErrTypecastNotAligned: {"TYPECAST_NOT_ALIGNED", "Typecast field option is not byte-aligned"},
	ErrTypecastNotEvent:   {"TYPECAST_NOT_EVENT", "Typecasts are only for eprobe fields"},
	ErrTypecastReqField:   {"TYPECAST_REQ_FIELD", "Typecast requires a field access"},
	ErrTypecastSymOffset:  {"TYPECAST_SYM_OFFSET", "@SYM+/-OFFSET with typecast needs parentheses"},
	ErrUsedArgName:        {"USED_ARG_NAME", "This argument name is already used"},
}

// Name returns the kernel's symbolic name of the code, e.g. "BAD_MAXACT".
func (c Code) Name() string {
	if c < 0 || c >= numCodes {
		return fmt.Sprintf("Code(%d)", int(c))
	}
	return codeTable[c].name
}

// String returns the symbolic name.
func (c Code) String() string { return c.Name() }

// Message returns the newest upstream kernel's message for the code. Use
// Dialect.Message for the text a given kernel release prints.
func (c Code) Message() string {
	if c < 0 || c >= numCodes {
		return ""
	}
	return codeTable[c].msg
}

// CodeByName looks a code up by its symbolic name.
func CodeByName(name string) (Code, bool) {
	for i, ci := range codeTable {
		if ci.name == name {
			return Code(i), true
		}
	}
	return ErrNone, false
}

// Codes returns every defined code except ErrNone, in table order.
func Codes() []Code {
	out := make([]Code, 0, numCodes-1)
	for c := ErrNone + 1; c < numCodes; c++ {
		out = append(out, c)
	}
	return out
}

// Error is a rejected probe definition: the kernel error code, the token
// (argv index) it is attributed to and the byte offset inside that token, as
// the kernel's trace_probe_log_err() records them, plus the errno the write
// fails with. Pos converts (Arg, Off) into the caret column of error_log.
type Error struct {
	Code  Code
	Arg   int           // index into the line's argv (log index)
	Off   int           // byte offset inside argv[Arg]
	Errno syscall.Errno // errno of the failing write, usually EINVAL
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (arg %d, offset %d)", e.Code.Name(), e.Code.Message(), e.Arg, e.Off)
}

// Pos returns the caret column within the command as error_log shows it
// (argv joined by single spaces): the sum of len(argv[j])+1 for j < Arg, plus
// Off. When Arg is past the last token the caret goes one column past the
// end of the command and Off is ignored, as in the kernel.
func (e *Error) Pos(argv []string) int {
	pos := 0
	if e.Arg >= len(argv) {
		for _, a := range argv {
			pos += len(a) + 1
		}
		return pos
	}
	for j := 0; j < e.Arg; j++ {
		pos += len(argv[j]) + 1
	}
	return pos + e.Off
}
