package grammar

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"
)

// participleParser is participle's reflective parser of one construct,
// the reference the generated parsers are checked against.
func participleParser[G any](scan scanner) *participle.Parser[G] {
	return participle.MustBuild[G](
		participle.Lexer(constructLexer{scan: scan}),
		participle.UseLookahead(participle.MaxLookahead),
	)
}

// checkSame parses s with participle and with the engine and
// compares the trees.
func checkSame[G any](t *testing.T, what string, pp *participle.Parser[G], gen func(string) (*G, error), s string) {
	t.Helper()
	want, werr := pp.ParseString("", s)
	got, gerr := gen(s)
	if (werr == nil) != (gerr == nil) {
		t.Errorf("%s %q: participle error %v, engine error %v", what, s, werr, gerr)
		return
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%s %q:\n engine     %+v\n participle %+v", what, s, got, want)
	}
}

// The engine builds the trees participle builds, for every argv
// entry of the corpora and a few more.
func TestEngineMatchesParticiple(t *testing.T) {
	head := participleParser[Head](scanHead)
	kp := participleParser[KprobePlace](scanKprobePlace)
	fp := participleParser[FprobePlace](scanFprobePlace)
	up := participleParser[UprobePlace](scanUprobePlace)
	ep := participleParser[EprobePlace](scanEprobePlace)
	rm := participleParser[Removal](scanRemoval)
	ap := participleParser[Argument](scanArgument)
	extra := []string{
		"p:grp/ev vfs_read+0x10 a=%di", "r16:ev vfs_read%return", "pxyz: ::", "-:a/b c", "p :x",
		"p /bin/sh:0x10(0x20)%return", "p :/x", "e:a/b sched.sched_switch", "p:a.b/c a:b:c-1%x",
		"u /a:1(2)x", "-:a.b/c", "-:/", "-x:y", "!p:a/b", "-", "!", "p a/b:(", "p a/b:1)", "p %", "p +", "p +5", "p 0x", "p %%%",
	}
	args := []string{
		"a=+0(+8(%di)):u32[4]", "+u-5(%di)x", "-u4($stack)", "+0(%di)x)y)", "+0(%di", "+0", "+", "-",
		"@0x10", "@+4", "@jiffies+8", "@sym-0x10", "@", `\"ab"`, `\"`, `\-5`, `\`, "$retval->a.b-c",
		"$", "$arg*", "x=$comm:string", "file->f_path.dentry->d_name.name:string", "a-b", "9x", "=x",
		"x:b4@2/32", "x:b4/32", "x:b@/", "x:b", "x:u8[", "x:u8[2]x", "x:[3]", "x:", ":", "a=", "%", "%di:%pd",
	}
	for _, a := range args {
		checkSame(t, "argument", ap, ParseArgument, a)
	}
	for _, full := range append(corpusLines(t), extra...) {
		for _, line := range strings.Split(full, "\n") {
			argv := Split(StripComment(line))
			if len(argv) == 0 {
				continue
			}
			checkSame(t, "head", head, ParseHead, argv[0])
			checkSame(t, "removal", rm, ParseRemoval, argv[0])
			if len(argv) < 2 {
				continue
			}
			checkSame(t, "kprobe place", kp, ParseKprobePlace, argv[1])
			checkSame(t, "fprobe place", fp, ParseFprobePlace, argv[1])
			checkSame(t, "uprobe place", up, ParseUprobePlace, argv[1])
			checkSame(t, "eprobe place", ep, ParseEprobePlace, argv[1])
			for _, a := range argv[2:] {
				checkSame(t, "argument", ap, ParseArgument, a)
			}
		}
	}
}
