package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig"
)

func TestParseGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	doc := `# looprig
default_profile = "work"
theme = "dark"
notify = "osc9"
notify_after = "90s"
tui_fps = 60

[profiles.work]
engine = "shell"
placement = "exclusive"
root = "project"            # relative to this file
gate_policy = [
  "rm -rf",
  "sudo",   # a comment inside the array
]
seed = "~/seed"

[profiles."quiet.demo"]
engine = "demo"
gate_policy = []

[profiles.shared1]
placement = 'shared'
root = "/srv/x"

[profiles.scripts]
tty = false

[profiles.vt]
term = "vt100"

[profiles.travel]
checkpoint = "stop"
checkpoint_max = "1.5 GiB"
checkpoint_exclude = ["node_modules/", "*.o"]
checkpoint_include = [".env.local", ".ssh/"]

[profiles.small]
checkpoint_max = 4096
`
	c, err := Parse(path, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultProfile != "work" || c.Theme != "dark" || c.Notify != "osc9" || c.NotifyAfter != 90*time.Second || c.TUIFPS != 60 {
		t.Fatalf("top level: %+v", c)
	}
	if b := Builtin(); b.Notify != "bell" || b.NotifyAfter != 10*time.Second || b.TUIFPS != 30 {
		t.Fatalf("built-in notify %q after %v, %d fps; want bell after 10s, 30 fps", b.Notify, b.NotifyAfter, b.TUIFPS)
	}
	home, _ := os.UserHomeDir()
	want := rig.Profile{Name: "work", Engine: "shell", Placement: rig.PlacementExclusive, PlacementPinned: true,
		Root: filepath.Join(dir, "project"), GatePolicy: []string{"rm -rf", "sudo"}, Seed: filepath.Join(home, "seed")}
	got, err := c.Profile("")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Profile(\"\") = %+v, %v; want %+v", got, err, want)
	}
	q, err := c.Profile("quiet.demo")
	if err != nil || q.Engine != "demo" || q.GatePolicy == nil || len(q.GatePolicy) != 0 || q.Placement != rig.PlacementSession {
		t.Fatalf("quiet.demo = %+v, %v (an empty gate_policy must mean no gates)", q, err)
	}
	if p, err := c.Profile("scripts"); err != nil || !p.NoTTY || p.Term != "" {
		t.Fatalf("scripts = %+v, %v; want tty off", p, err)
	}
	if p, err := c.Profile("vt"); err != nil || p.NoTTY || p.Term != "vt100" {
		t.Fatalf("vt = %+v, %v; want a pseudo-terminal with TERM vt100", p, err)
	}
	if p, err := c.Profile("travel"); err != nil || p.Checkpoint != rig.CheckpointStop || p.CheckpointMax != 3<<29 ||
		!reflect.DeepEqual(p.CheckpointExclude, []string{"node_modules/", "*.o"}) ||
		!reflect.DeepEqual(p.CheckpointInclude, []string{".env.local", ".ssh/"}) {
		t.Fatalf("travel = %+v, %v; want checkpoints at stop, at most 1.5 GiB, two excludes, two includes", p, err)
	}
	if p, err := c.Profile("small"); err != nil || p.Checkpoint != "" || p.CheckpointMax != 4096 || p.PlacementPinned {
		t.Fatalf("small = %+v, %v; want the default mode, at most 4096 bytes", p, err)
	}
	if d, _ := c.Profile("default"); !reflect.DeepEqual(d, rig.DefaultProfile()) {
		t.Fatalf("default = %+v", d)
	}
	if names := c.Names(); !reflect.DeepEqual(names, []string{"default", "demo", "quiet.demo", "scripts", "shared1", "small", "travel", "vt", "work"}) {
		t.Fatalf("Names = %v", names)
	}
	var unknown *UnknownProfileError
	if _, err := c.Profile("nope"); !errors.As(err, &unknown) || !strings.Contains(err.Error(), "default, demo, quiet.demo, scripts, shared1, small, travel, vt, work") {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		line  int
		field string
		in    string // substring of the reason
	}{
		{"syntax", "theme = \"dark\"\nbroken = = 1\n", 2, "", "invalid TOML"},
		{"unknown top key", "theme = \"x\"\n\nthme = \"y\"\n", 3, "thme", `unknown key "thme"`},
		{"unknown profile key", "[profiles.work]\nengine = \"shell\"\nenigne = \"demo\"\n", 3, "profiles.work.enigne", `unknown key "enigne"`},
		{"wrong type", "[profiles.work]\n\nengine = 3\n", 3, "profiles.work.engine", "must be a string, not an integer"},
		{"bad placement", "[profiles.w]\nplacement = \"everywhere\"\n", 2, "profiles.w.placement", "must be session, exclusive or shared"},
		{"missing root", "\n[profiles.x]\nplacement = \"exclusive\"\n", 2, "profiles.x.root", "root is required for exclusive placement"},
		{"root without placement", "[profiles.x]\nroot = \"/tmp\"\n", 2, "profiles.x.root", "root needs placement"},
		{"unknown engine", "[profiles.x]\nengine = \"gpt\"\n", 2, "profiles.x.engine", `unknown engine "gpt" (known engines: claude, codex, demo, shell)`},
		{"gate policy type", "[profiles.x]\ngate_policy = \"sudo\"\n", 2, "profiles.x.gate_policy", "must be an array of strings"},
		{"tty type", "[profiles.x]\ntty = \"no\"\n", 2, "profiles.x.tty", "must be true or false"},
		{"term empty", "[profiles.x]\nterm = \"\"\n", 2, "profiles.x.term", "must name a terminal type"},
		{"gate policy element", "[profiles.x]\ngate_policy = [\"sudo\", 1]\n", 2, "profiles.x.gate_policy", "element 2 must be a string"},
		{"bad checkpoint", "[profiles.x]\ncheckpoint = \"always\"\n", 2, "profiles.x.checkpoint", "must be turn, stop or off"},
		{"shared checkpoint", "[profiles.x]\nplacement = \"shared\"\nroot = \"/srv\"\ncheckpoint = \"turn\"\n", 4, "profiles.x.checkpoint", "a shared workspace is never checkpointed"},
		{"bad checkpoint_max", "[profiles.x]\ncheckpoint_max = \"lots\"\n", 2, "profiles.x.checkpoint_max", "must be a size such as 500MB"},
		{"negative checkpoint_max", "[profiles.x]\ncheckpoint_max = -1\n", 2, "profiles.x.checkpoint_max", "must be 0 or more bytes"},
		{"checkpoint_max type", "[profiles.x]\ncheckpoint_max = true\n", 2, "profiles.x.checkpoint_max", "must be a number of bytes"},
		{"checkpoint_exclude element", "[profiles.x]\ncheckpoint_exclude = [\"a\", \"\"]\n", 2, "profiles.x.checkpoint_exclude", "element 2 must be a non-empty string"},
		{"checkpoint_exclude pattern", "[profiles.x]\ncheckpoint_exclude = [\"[a\"]\n", 2, "profiles.x.checkpoint_exclude", `element 1 "[a" is not a gitignore pattern: unclosed "[" class`},
		{"checkpoint_include type", "[profiles.x]\n\ncheckpoint_include = \".env\"\n", 3, "profiles.x.checkpoint_include", "must be an array of strings, not a string"},
		{"checkpoint_include element", "[profiles.x]\ncheckpoint_include = [\".env\", 3]\n", 2, "profiles.x.checkpoint_include", "element 2 must be a non-empty string, not an integer"},
		{"checkpoint_include pattern", "[profiles.x]\ncheckpoint_include = [\"x\\\\\"]\n", 2, "profiles.x.checkpoint_include", `element 1 "x\\" is not a gitignore pattern: pattern ends with an unescaped "\"`},
		{"checkpoint_include length", "[profiles.x]\ncheckpoint_include = [\"" + strings.Repeat("a", 4097) + "\"]\n", 2, "profiles.x.checkpoint_include", "element 1 is longer than 4096 bytes"},
		{"redefine builtin", "[profiles.default]\nengine = \"demo\"\n", 1, "profiles.default", "built-in profile"},
		{"bad default profile", "default_profile = \"wrk\"\n[profiles.work]\n", 1, "default_profile", `unknown profile "wrk"`},
		{"profiles not a table", "profiles = 1\n", 1, "profiles", "must be a table of profiles"},
		{"dotted key", "[profiles]\nwork.engine = 1\n", 2, "profiles.work.engine", "must be a string"},
		{"bad profile name", "[profiles.\"my profile\"]\n", 1, "profiles.my profile", "a profile name is"},
		{"bad notify", "notify = \"beep\"\n", 1, "notify", `unknown mode "beep" (known modes: bell, osc9, osc777, none)`},
		{"notify type", "notify = true\n", 1, "notify", "must be a string"},
		{"bad notify_after", "\nnotify_after = \"ten seconds\"\n", 2, "notify_after", "is not a duration"},
		{"negative notify_after", "notify_after = \"-1s\"\n", 1, "notify_after", "is not a duration"},
		{"tui_fps 0", "tui_fps = 0\n", 1, "tui_fps", "must be a whole number of frames a second from 1 to 120 (default 30), not 0"},
		{"tui_fps over 120", "\ntui_fps = 240\n", 2, "tui_fps", "from 1 to 120 (default 30), not 240"},
		{"tui_fps string", "tui_fps = \"60\"\n", 1, "tui_fps", "not a string"},
		{"tui_fps float", "tui_fps = 59.94\n", 1, "tui_fps", "not a float"},
		{"after multiline string", "theme = \"\"\"\nfoo = 1\n\"\"\"\nfoo = 2\n", 4, "foo", `unknown key "foo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/etc/looprig.toml", []byte(tt.doc))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse = %v, want *Error", err)
			}
			if ce.File != "/etc/looprig.toml" || ce.Line != tt.line || ce.Field != tt.field || !strings.Contains(ce.Reason, tt.in) {
				t.Fatalf("got %#v (%v); want line %d field %q reason containing %q", ce, err, tt.line, tt.field, tt.in)
			}
			wantPrefix := "/etc/looprig.toml:" + strconv.Itoa(tt.line) + ": "
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Fatalf("message %q does not start with %q", err, wantPrefix)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")
	c, err := Load(missing, false)
	if err != nil || c.DefaultProfile != "default" || c.Path != "" {
		t.Fatalf("missing default file: %+v, %v", c, err)
	}
	_, err = Load(missing, true)
	var ce *Error
	if !errors.As(err, &ce) || ce.File != missing || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing explicit file: %v", err)
	}
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("theme = \"light\"\n"), 0o600)
	if c, err := Load(good, true); err != nil || c.Theme != "light" || c.Path != good {
		t.Fatalf("Load good: %+v, %v", c, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	if p, _ := DefaultPath(); p != "/x/cfg/looprig/config.toml" {
		t.Fatalf("DefaultPath = %s", p)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.config/looprig/config.toml" {
		t.Fatalf("DefaultPath = %s", p)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("[profiles.w]\nengine = \"shell\"\n"))
	f.Add([]byte("default_profile = \"x\"\n[profiles.x]\nplacement = \"shared\"\nroot = \"/\"\n"))
	f.Add([]byte("a = \"\"\"\nb\n\"\"\"\n[t]\nc = [1,\n2]\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Parse("/c.toml", doc)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "/c.toml" {
				t.Fatalf("error %v is not a *Error naming the file", err)
			}
			return
		}
		for _, n := range c.Names() {
			if _, err := c.Profile(n); err != nil {
				t.Fatalf("listed profile %q does not resolve: %v", n, err)
			}
		}
	})
}
