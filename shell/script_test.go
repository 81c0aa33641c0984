package shell

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Load picks -c text, a script file or stdin, as `ktrace sh` does.
func TestLoad(t *testing.T) {
	cmd := "echo $0 $1"
	s, err := Load(&cmd, []string{"name", "one"}, strings.NewReader("ignored"))
	if err != nil {
		t.Fatal(err)
	}
	if s.tty != nil || !reflect.DeepEqual(s.params, []string{"one"}) || s.file.Name != "name" {
		t.Errorf("-c: script %q with %q, want name with [one]", s.file.Name, s.params)
	}
	empty := ""
	if s, err := Load(&empty, nil, nil); err != nil || s.file.Name != "sh" || s.params != nil {
		t.Errorf("-c '': %v, %v", s, err)
	}

	path := filepath.Join(t.TempDir(), "t.sh")
	if err := os.WriteFile(path, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Load(nil, []string{path, "a", "b"}, strings.NewReader("ignored"))
	if err != nil || s.file.Name != path || !reflect.DeepEqual(s.params, []string{"a", "b"}) || len(s.file.Stmts) != 1 {
		t.Errorf("file: %+v, %v", s, err)
	}

	// Stdin that is no terminal is parsed whole.
	s, err = Load(nil, nil, strings.NewReader("echo a; echo b\n"))
	if err != nil || s.tty != nil || s.file.Name != "sh" || len(s.file.Stmts) != 2 {
		t.Errorf("stdin: %+v, %v", s, err)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(nil, []string{filepath.Join(t.TempDir(), "none.sh")}, nil)
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want an *OpenError wrapping ErrNotExist", err)
	}
	bad := "if then"
	if _, err := Load(&bad, nil, nil); err == nil || errors.As(err, &oe) {
		t.Errorf("syntax error: %v, want a parse error", err)
	}
}
