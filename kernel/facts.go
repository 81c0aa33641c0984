package kernel

// Fact is one thing a model knows about its kernel and where it learnt it,
// for "ktrace kernel info": a running kernel shows its facts in several
// places (/proc, /sys, tracefs, debugfs, BTF, its own text), and which of
// them a machine offers decides how exact the model can be.
type Fact struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Facts returns what the model knows and from where, in the order it was
// learnt.
func (m *Model) Facts() []Fact {
	m.factsMu.Lock()
	defer m.factsMu.Unlock()
	return append([]Fact(nil), m.facts...)
}

func (m *Model) addFact(name, value, source string) {
	m.factsMu.Lock()
	defer m.factsMu.Unlock()
	m.facts = append(m.facts, Fact{Name: name, Value: value, Source: source})
}

// configSignals are the build options ktrace's rules depend on, each with
// the symbols whose presence in kallsyms shows it was set. Options a
// config file sets are kept; the others are derived here, so a kernel that
// shows no configuration (no /proc/config.gz, no /boot) is modelled the
// same way. Checked against the pinned 6.1 and 6.12 kernels' configs (see
// facts_test.go).
var configSignals = []struct {
	option string
	// any is a list of symbols; one of them present sets the option.
	any []string
	why string
}{
	// The IBT self-test and the ENDBR seal list exist only with
	// CONFIG_X86_KERNEL_IBT (arch/x86/kernel/cet.c, alternative.c).
	{"CONFIG_X86_KERNEL_IBT", []string{"ibt_selftest", "__ibt_endbr_seal"}, "IBT: kprobes at a function entry move past ENDBR64"},
	// register_fprobe_ips is kernel/trace/fprobe.c, built with
	// CONFIG_FPROBE, which also gives kprobe-multi links.
	{"CONFIG_FPROBE", []string{"register_fprobe_ips"}, "fprobes and kprobe-multi links"},
	// Data symbols are listed only with CONFIG_KALLSYMS_ALL.
	{"CONFIG_KALLSYMS_ALL", []string{"init_task", "jiffies_64"}, "data symbols are in kallsyms"},
	// KASAN doubles the kernel stack, which bounds $stackN.
	{"CONFIG_KASAN", []string{"kasan_report", "__asan_load8"}, "larger kernel stacks"},
	{"CONFIG_KPROBES", []string{"register_kprobe"}, "kprobes"},
	// stack_trace_call is the stack tracer's ftrace callback
	// (kernel/trace/trace_stack.c).
	{"CONFIG_STACK_TRACER", []string{"stack_trace_call"}, "the stack tracer"},
	{"CONFIG_KPROBE_EVENTS", []string{"trace_kprobe_run_command", "create_local_trace_kprobe"}, "the kprobe tracer"},
}

// archSignals tell the architecture from its entry code, for kernels
// without a config file.
var archSignals = []struct {
	option string
	any    []string
}{
	{"CONFIG_X86_64", []string{"entry_SYSCALL_64", "__x64_sys_read"}},
	{"CONFIG_ARM64", []string{"el0t_64_sync", "__arm64_sys_read"}},
}

// deriveConfig completes the configuration with what kallsyms shows, for
// the options ktrace's rules need, and records each as a fact.
func (m *Model) deriveConfig() {
	fromFile := len(m.config) > 0
	has := func(names []string) (string, bool) {
		for _, n := range names {
			if len(m.Symbols("", n)) > 0 {
				return n, true
			}
		}
		return "", false
	}
	if !fromFile {
		for _, a := range archSignals {
			if sym, ok := has(a.any); ok {
				m.config[a.option] = "y"
				m.addFact("arch", a.option, "kallsyms: "+sym)
				break
			}
		}
	}
	for _, s := range configSignals {
		if fromFile {
			v := m.config[s.option]
			if v == "" {
				v = "n"
			}
			m.addFact(s.option, v, "config")
			continue
		}
		if sym, ok := has(s.any); ok {
			m.config[s.option] = "y"
			m.addFact(s.option, "y", "kallsyms: "+sym+" ("+s.why+")")
		} else {
			m.addFact(s.option, "n", "kallsyms: none of "+joinNames(s.any))
		}
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
