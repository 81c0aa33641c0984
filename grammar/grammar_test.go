package grammar

import (
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t ", nil},
		{"p vfs_read", []string{"p", "vfs_read"}},
		{"  p:ev\tvfs_read \v a=%di\r\n", []string{"p:ev", "vfs_read", "a=%di"}},
		{`p vfs_read a=\"a b"`, []string{"p", "vfs_read", `a=\"a`, `b"`}},
	}
	for _, tt := range tests {
		if got := Split(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Command([]string{"p:ev", "vfs_read", "a=%di"}); got != "p:ev vfs_read a=%di" {
		t.Errorf("Command = %q", got)
	}
	if got := StripComment(`p vfs_read a=\"#x" # c`); got != `p vfs_read a=\"` {
		t.Errorf("StripComment = %q", got)
	}
}

func TestKstrto(t *testing.T) {
	u := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"10", 10, true}, {"010", 8, true}, {"0x10", 16, true},
		{"0X1f", 31, true}, {"+5", 5, true}, {"0x", 0, false}, {"08", 0, false},
		{"", 0, false}, {"-1", 0, false}, {"1x", 0, false},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{"0xffffffff8143f690", 0xffffffff8143f690, true},
	}
	for _, tt := range u {
		got, err := ParseUint64(tt.in, 0)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseUint64(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	s := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"-1", -1, true}, {"+16", 16, true}, {"+-1", 0, false}, {"-0x10", -16, true},
		{"+", 0, false}, {"-", 0, false}, {"+abc", 0, false},
		{"9223372036854775807", 1<<63 - 1, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775808", -1 << 63, true},
	}
	for _, tt := range s {
		got, err := ParseInt64(tt.in, 0)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseInt64(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// Maxactive results as both pinned kernels report them (VM-verified).
func TestMaxactive(t *testing.T) {
	tests := []struct {
		argv0 string
		want  int
		code  Code
	}{
		{"r5", 5, ErrNone}, {"r010", 8, ErrNone}, {"r0x10", 16, ErrNone},
		{"r4096", 4096, ErrNone}, {"r4097", 0, ErrMaxactTooBig},
		{"r0", 0, ErrBadMaxact}, {"r1x", 0, ErrBadMaxact}, {"r1x:ev", 0, ErrBadMaxact},
		{"r" + strings.Repeat("1", 64), 0, ErrBadMaxact},
	}
	for _, tt := range tests {
		h := mustHead(t, tt.argv0)
		if !h.HasMaxactive() {
			t.Fatalf("%q: no maxactive", tt.argv0)
		}
		got, err := h.ParseMaxactive()
		if tt.code != ErrNone {
			if err == nil || err.Code != tt.code || err.Arg != 0 || err.Off != 1 {
				t.Errorf("%q: err = %v, want %v at (0,1)", tt.argv0, err, tt.code)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %d, %v; want %d", tt.argv0, got, err, tt.want)
		}
	}
	h := mustHead(t, "pxyz:ev")
	if g, e, err := h.EventName(); h.HasMaxactive() || h.Prefix.Value != "xyz" || !h.HasEvent() || g != "" || e != "ev" || err != nil {
		t.Errorf("ParseHead(pxyz:ev) = %+v", h)
	}
}

// Event specs and the carets both pinned kernels log for them.
func TestParseEventName(t *testing.T) {
	long := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 3)
	tests := []struct {
		argv0        string
		group, event string
		code         Code
		off          int
	}{
		{"p:ev", "", "ev", ErrNone, 0},
		{"p:grp/ev", "grp", "ev", ErrNone, 0},
		{"p:grp.ev", "grp", "ev", ErrNone, 0},
		{"p:grp/", "grp", "", ErrNone, 0},
		{"p:grp.", "grp", "", ErrNone, 0},
		{"p:grp-x/ev", "grp-x", "ev", ErrNone, 0},
		{"p:-grp/ev", "-grp", "ev", ErrNone, 0},
		{"p:", "", "", ErrNoEventName, 2},
		{"p:/ev", "", "", ErrNoGroupName, 2},
		{"p:.ev", "", "", ErrNoGroupName, 2},
		{"p:1grp/ev", "", "", ErrBadGroupName, 2},
		{"p:grp/1ev", "", "", ErrBadEventName, 6},
		{"p:ev-x", "", "", ErrBadEventName, 2},
		{"p:grp/ev/x", "", "", ErrBadEventName, 6},
		{"p:grp/ev.x", "", "", ErrBadEventName, 6},
		{"p:grp.ev/x", "", "", ErrBadGroupName, 2},
		{"p:" + long[:63], "", long[:63], ErrNone, 0},
		{"p:" + long[:64], "", "", ErrEventTooLong, 2},
		{"p:" + long[:63] + "/ev", long[:63], "ev", ErrNone, 0},
		{"p:" + long[:64] + "/ev", "", "", ErrGroupTooLong, 2},
		{"r1x:grp/" + long[:64], "", "", ErrEventTooLong, 8},
	}
	for _, tt := range tests {
		h := mustHead(t, tt.argv0)
		g, e, err := h.EventName()
		if tt.code != ErrNone {
			if err == nil || err.Code != tt.code || err.Off != tt.off || err.Arg != 0 {
				t.Errorf("%q: err = %v, want %v off %d", tt.argv0, err, tt.code, tt.off)
			}
			continue
		}
		if err != nil || g != tt.group || e != tt.event {
			t.Errorf("%q = %q/%q %v; want %q/%q", tt.argv0, g, e, err, tt.group, tt.event)
		}
	}
}

func TestParseKprobePlace(t *testing.T) {
	tests := []struct {
		arg     string
		want    KprobeSite
		code    Code
		off     int
		notMine bool
	}{
		{arg: "vfs_read", want: KprobeSite{Symbol: "vfs_read", Func: "vfs_read"}},
		{arg: "vfs_read+0x10", want: KprobeSite{Symbol: "vfs_read", Func: "vfs_read", Offset: 16}},
		{arg: "vfs_read+4%return", want: KprobeSite{Symbol: "vfs_read", Func: "vfs_read", Offset: 4, Return: true}},
		{arg: "ext4:ext4_sync_fs", want: KprobeSite{Symbol: "ext4:ext4_sync_fs", Module: "ext4", Func: "ext4_sync_fs", HasMod: true}},
		{arg: ":vfs_read", want: KprobeSite{Symbol: ":vfs_read", Func: "vfs_read", HasMod: true}},
		{arg: "0xffffffff8143f690", want: KprobeSite{IsAddr: true, Addr: 0xffffffff8143f690}},
		{arg: "+5", want: KprobeSite{IsAddr: true, Addr: 5}},
		{arg: "123", want: KprobeSite{IsAddr: true, Addr: 123}},
		{arg: "vfs_read%ret", code: ErrBadAddrSuffix, off: 8},
		{arg: "vfs_read%returnx", code: ErrBadAddrSuffix, off: 8},
		{arg: "vfs_read%return+4", code: ErrBadAddrSuffix, off: 8},
		{arg: "vfs_read+-1", code: ErrBadProbeAddr},
		{arg: "vfs_read-1", code: ErrBadProbeAddr},
		{arg: "vfs_read+", code: ErrBadProbeAddr},
		{arg: "vfs_read+abc", code: ErrBadProbeAddr},
		{arg: "vfs_read+0x100000000", code: ErrBadProbeAddr},
		{arg: "-1", code: ErrBadProbeAddr},
		{arg: "/bin/sh:0x10", notMine: true},
		{arg: ":/x", notMine: true},
		{arg: "a/b:c%return", notMine: true},
		{arg: "a.b:c", want: KprobeSite{Symbol: "a.b:c", Module: "a.b", Func: "c", HasMod: true}},
	}
	for _, tt := range tests {
		p, perr := ParseKprobePlace(tt.arg)
		if perr != nil {
			t.Fatal(perr)
		}
		notMine := p.IsUprobe()
		var got KprobeSite
		var err *Error
		if !notMine {
			got, err = p.Site()
		}
		if notMine != tt.notMine {
			t.Errorf("%q: notMine = %v", tt.arg, notMine)
			continue
		}
		if tt.code != ErrNone {
			if err == nil || err.Code != tt.code || err.Arg != 1 || err.Off != tt.off {
				t.Errorf("%q: err = %v, want %v off %d", tt.arg, err, tt.code, tt.off)
			}
			continue
		}
		if err != nil || (!tt.notMine && got != tt.want) {
			t.Errorf("%q = %+v, %v; want %+v", tt.arg, got, err, tt.want)
		}
	}
}

func TestParseFprobePlace(t *testing.T) {
	tests := []struct {
		arg  string
		tp   bool
		want FprobeSite
		code Code
		off  int
	}{
		{arg: "vfs_read", want: FprobeSite{Symbol: "vfs_read"}},
		{arg: "vfs_read%return", want: FprobeSite{Symbol: "vfs_read", Return: true}},
		{arg: "vfs_read%ret", code: ErrBadAddrSuffix, off: 8},
		{arg: "sched_switch%return", tp: true, code: ErrBadAddrSuffix, off: 12},
		{arg: "sched-switch", tp: true, code: ErrBadTPName, off: 5},
		{arg: "1abc", tp: true, want: FprobeSite{Symbol: "1abc"}},
	}
	for _, tt := range tests {
		p, perr := ParseFprobePlace(tt.arg)
		if perr != nil {
			t.Fatal(perr)
		}
		got, err := p.Site(tt.tp, Latest)
		if tt.code != ErrNone {
			if err == nil || err.Code != tt.code || err.Off != tt.off {
				t.Errorf("%q: err = %v, want %v off %d", tt.arg, err, tt.code, tt.off)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %+v, %v", tt.arg, got, err)
		}
	}
}

func mustHead(t *testing.T, argv0 string) *Head {
	t.Helper()
	h, err := ParseHead(argv0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDialect(t *testing.T) {
	if d := DialectFor(6, 1); d.Name != "6.1" {
		t.Errorf("6.1 -> %s", d.Name)
	}
	if d := DialectFor(6, 8); d.Name != "6.1" {
		t.Errorf("6.8 -> %s", d.Name)
	}
	if d := DialectFor(6, 12); d != Latest {
		t.Errorf("6.12 -> %s", d.Name)
	}
	if d := DialectFor(7, 0); d != Latest {
		t.Errorf("7.0 -> %s", d.Name)
	}
	if d := DialectFor(5, 10); d.Name != "6.1" {
		t.Errorf("5.10 -> %s", d.Name)
	}
	// The rows as the pinned kernels behaved when booted (tools/vmsh).
	old, cur := DialectFor(6, 1), Latest
	rows := []struct {
		what    string
		got61   any
		got612  any
		want61  any
		want612 any
	}{
		{"MaxArgStrLen", old.MaxArgStrLen, cur.MaxArgStrLen, 63, 63},
		{"ArgTooLongErrno", old.ArgTooLongErrno, cur.ArgTooLongErrno, syscall.EINVAL, syscall.E2BIG},
		{"TooManyArgs", old.TooManyArgs, cur.TooManyArgs, ArgsIgnoreExtra, ArgsE2BIG},
		{"UnknownSymbolErrno", old.UnknownSymbolErrno, cur.UnknownSymbolErrno, syscall.ENOENT, syscall.EINVAL},
		{"NonUniqSymbolErrno", old.NonUniqSymbolErrno, cur.NonUniqSymbolErrno, syscall.EADDRNOTAVAIL, syscall.EINVAL},
		{"Fprobe", old.Fprobe, cur.Fprobe, false, true},
		{"BTFArgs", old.BTFArgs, cur.BTFArgs, false, true},
		{"SanitizeStar", old.SanitizeStar, cur.SanitizeStar, false, true},
		{"DentryArgs", old.DentryArgs, cur.DentryArgs, false, true},
		{"Symstr", old.Symstr, cur.Symstr, true, true},
	}
	for _, r := range rows {
		if r.got61 != r.want61 || r.got612 != r.want612 {
			t.Errorf("%s: 6.1=%v 6.12=%v, want %v %v", r.what, r.got61, r.got612, r.want61, r.want612)
		}
	}
	// Message spellings seen in the pinned kernels' error_log.
	msgs := []struct {
		d    *Dialect
		c    Code
		want string
	}{
		{DialectFor(6, 1), ErrBadMaxactType, "Maxactive is not for kprobe"},
		{Latest, ErrBadMaxactType, "Maxactive is only for function exit"},
		{DialectFor(6, 1), ErrBadVar, "Invalid $-variable specified"},
		{Latest, ErrBadVar, "Invalid $-valiable specified"},
		{DialectFor(6, 1), ErrFileOnKprobe, "File offset is not available with kprobe"},
		{Latest, ErrFileOnKprobe, "File offset is not available with kprobe"},
	}
	for _, m := range msgs {
		if got := m.d.Message(m.c); got != m.want {
			t.Errorf("%s %v = %q, want %q", m.d.Name, m.c, got, m.want)
		}
	}
}

func TestNames(t *testing.T) {
	if !IsGoodName("_a1") || IsGoodName("1a") || IsGoodName("a-b") || IsGoodName("") {
		t.Error("IsGoodName")
	}
	if !IsGoodSystemName("-a-b") || IsGoodSystemName("1a") || IsGoodSystemName("a.b") {
		t.Error("IsGoodSystemName")
	}
	if got := SanitizeEventName("p_:vfs.read*_0", true); got != "p__vfs_read__0" {
		t.Errorf("sanitize = %q", got)
	}
	if got := SanitizeEventName(".a.b", false); got != ".a_b" {
		t.Errorf("sanitize first byte = %q", got)
	}
	if got := SanitizeEventName("vfs_rea*__entry", false); got != "vfs_rea*__entry" {
		t.Errorf("sanitize no star = %q", got)
	}
}
