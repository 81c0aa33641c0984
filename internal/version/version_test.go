package version

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0"}, "(devel), no VCS revision recorded, go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "v1.2.3, revision abc (modified) from 2026-01-02T03:04:05Z, go1.26.0"},
	}
	for _, tt := range tests {
		if got := of(&tt.bi); got != tt.want {
			t.Errorf("of(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}
