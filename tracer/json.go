package tracer

import (
	"strconv"
	"unicode/utf8"

	"github.com/ktrace-dev/ktrace/fetchargs"
)

// AppendJSON appends one JSON object for the record and a newline:
//
//	{"event":"GRP/EV","comm":"cat","pid":42,"cpu":0,"ts_ns":123,
//	 "ip":"do_sys_openat2+0x0/0x1c0","args":{"path":"/etc/hostname"}}
//
// "ip" is the probe part as the trace line prints it (for return probes
// "CALLER+0xOFF/0xSIZE <- FUNC"). Argument values are typed: integers of
// every u/s/x type as JSON numbers, char as a one-character string, symbol
// and symstr as their printed text, strings as strings, arrays as arrays,
// and a faulted string as null.
func (d *Decoder) AppendJSON(b []byte, r *Record) []byte {
	ev := r.Probe.Event
	b = append(b, `{"event":`...)
	b = appendJSONString(b, []byte(ev.Group+"/"+ev.Name))
	b = append(b, `,"comm":`...)
	b = appendJSONString(b, r.Comm)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(r.Pid()), 10)
	b = append(b, `,"cpu":`...)
	b = strconv.AppendUint(b, uint64(r.CPU), 10)
	b = append(b, `,"ts_ns":`...)
	b = strconv.AppendUint(b, r.TS, 10)
	b = append(b, `,"ip":`...)
	b = appendJSONString(b, d.AppendIP(nil, r))
	b = append(b, `,"args":{`...)
	b = d.appendArgs(b, r, true)
	return append(b, "}}\n"...)
}

// appendJSONValue prints one value of type t at record offset off as
// JSON. A value that is not a number is the JSON string of its trace text
// without the quotes around it there; a faulted string is null.
func (d *Decoder) appendJSONValue(b []byte, r *Record, t *fetchargs.Type, off int) []byte {
	rec := r.Raw
	switch t.Name {
	case "string", "ustring", "symstr", "symbol", "char":
		var buf [128]byte
		text := d.appendValue(buf[:0], r, t, off)
		switch {
		case string(text) == "(fault)": // a value that holds "(fault)" prints quoted
			return append(b, "null"...)
		case t.Name != "symbol":
			text = text[1 : len(text)-1]
		}
		return appendJSONString(b, text)
	}
	v := raw(rec, off, t.Size)
	if t.IsSigned {
		return strconv.AppendInt(b, signExtend(v, t.Size), 10)
	}
	return strconv.AppendUint(b, v, 10)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; bytes that are not UTF-8
// become U+FFFD, as encoding/json does.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
