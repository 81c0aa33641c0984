package grammar

// MaxEventNameLen is the kernel's MAX_EVENT_NAME_LEN: group and event names
// must be shorter, and automatic names are truncated to one byte less.
const MaxEventNameLen = 64

// IsGoodName reports whether s is a valid event or argument name (the
// kernel's is_good_name): a C identifier.
func IsGoodName(s string) bool {
	if len(s) == 0 || !(isAlpha(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !(isAlnum(s[i]) || s[i] == '_') {
			return false
		}
	}
	return true
}

// IsGoodSystemName reports whether s is a valid group name (the kernel's
// is_good_system_name): like IsGoodName, but '-' is allowed anywhere.
func IsGoodSystemName(s string) bool {
	if len(s) == 0 || !(isAlpha(s[0]) || s[0] == '_' || s[0] == '-') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !(isAlnum(s[i]) || s[i] == '_' || s[i] == '-') {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// SanitizeEventName applies the kernel's sanitize_event_name to an
// automatically generated name: every ':', '.' and (on kernels that do it)
// '*' after the first byte becomes '_'. The first byte is never touched.
func SanitizeEventName(s string, star bool) string {
	var b []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == ':' || c == '.' || (star && c == '*') {
			if b == nil {
				b = []byte(s)
			}
			b[i] = '_'
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// TruncateName cuts an automatically generated name to what the kernel's
// snprintf into a MAX_EVENT_NAME_LEN buffer keeps.
func TruncateName(s string) string {
	if len(s) > MaxEventNameLen-1 {
		return s[:MaxEventNameLen-1]
	}
	return s
}
