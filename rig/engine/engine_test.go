package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testSink records output and answers gates with a configurable function.
type testSink struct {
	mu       sync.Mutex
	chunks   []chunk
	gates    []string
	gate     func(ctx context.Context, prompt string) (bool, error)
	discard  bool // count only
	bytes    map[Stream]int
	maxChunk int

	inOutput atomic.Int32
	overlap  atomic.Bool
	empty    atomic.Bool
	notify   chan struct{}
	onOutput func(text string)
}

type chunk struct {
	stream Stream
	text   string
}

func newSink() *testSink {
	return &testSink{notify: make(chan struct{}, 1), bytes: map[Stream]int{}}
}

func (s *testSink) Output(stream Stream, text string) {
	if s.inOutput.Add(1) != 1 {
		s.overlap.Store(true)
	}
	defer s.inOutput.Add(-1)
	if text == "" {
		s.empty.Store(true)
	}
	if s.onOutput != nil {
		s.onOutput(text)
	}
	s.mu.Lock()
	s.bytes[stream] += len(text)
	s.maxChunk = max(s.maxChunk, len(text))
	if !s.discard {
		s.chunks = append(s.chunks, chunk{stream, text})
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *testSink) Gate(ctx context.Context, prompt string) (bool, error) {
	s.mu.Lock()
	s.gates = append(s.gates, prompt)
	g := s.gate
	s.mu.Unlock()
	if g == nil {
		return false, errors.New("unexpected gate")
	}
	return g(ctx, prompt)
}

func (s *testSink) text(stream Stream) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, c := range s.chunks {
		if c.stream == stream {
			b.WriteString(c.text)
		}
	}
	return b.String()
}

func (s *testSink) gateCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.gates...)
}

// waitOutput waits until stream's text contains want.
func (s *testSink) waitOutput(t *testing.T, stream Stream, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(s.text(stream), want) {
		select {
		case <-s.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %q on %s; have %q", want, stream, s.text(stream))
		}
	}
}

func (s *testSink) check(t *testing.T) {
	t.Helper()
	if s.overlap.Load() {
		t.Error("Output was called concurrently")
	}
	if s.empty.Load() {
		t.Error("Output was called with empty text")
	}
}

type runResult struct {
	res Result
	err error
}

// runAsync runs e in a goroutine; the channel yields its outcome.
func runAsync(ctx context.Context, e Engine, turn Turn, sink Sink) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		res, err := e.Run(ctx, turn, sink)
		ch <- runResult{res, err}
	}()
	return ch
}

// await fails the test if the run does not end within d (a generous bound).
func await(t *testing.T, ch <-chan runResult, d time.Duration) runResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		panic("unreachable")
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"shell", "demo", "claude", "codex"} {
		e, err := Lookup(name, Config{})
		if err != nil || e.Name() != name {
			t.Fatalf("Lookup(%q) = %v, %v", name, e, err)
		}
	}
	_, err := Lookup("nope", Config{})
	var ue *UnknownEngineError
	if !errors.As(err, &ue) {
		t.Fatalf("Lookup(nope) err = %v, want *UnknownEngineError", err)
	}
	if ue.Name != "nope" || !reflect.DeepEqual(ue.Known, []string{"claude", "codex", "demo", "shell"}) {
		t.Fatalf("got %+v", ue)
	}
	if !strings.Contains(err.Error(), "claude, codex, demo, shell") {
		t.Fatalf("message %q does not list known engines", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.DemoSteps != 10 || c.DemoInterval != time.Second || c.ShellGrace != 3*time.Second ||
		c.MaxLine != 64<<10 || c.Term != "xterm-256color" || c.NoTTY || !reflect.DeepEqual(c.GatePolicy, DefaultGatePolicy) {
		t.Fatalf("defaults: %+v", c)
	}
	if c := (Config{GatePolicy: []string{}}).withDefaults(); len(c.GatePolicy) != 0 {
		t.Fatalf("empty policy replaced: %v", c.GatePolicy)
	}
}

func TestMatchPolicy(t *testing.T) {
	cases := []struct {
		input, want string
	}{
		{"rm -rf build", "rm -rf"},
		{"cd x &&   rm\t-rf  /", "rm -rf"},
		{"echo hi\nsudo\tls", "sudo"},
		{"git  push --force origin", "git push --force"},
		{"git push -f", "git push -f"},
		{"dd if=/dev/zero of=x", "dd if="},
		{"cat x > /dev/sda", "> /dev/sd"},
		{"ls -la", ""},
		{"rm -r build", ""},
		{"RM -RF x", ""}, // case-sensitive
	}
	for _, c := range cases {
		got, ok := matchPolicy(DefaultGatePolicy, c.input)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("matchPolicy(%q) = %q, %v; want %q", c.input, got, ok, c.want)
		}
	}
	if _, ok := matchPolicy([]string{"", "  "}, "anything"); ok {
		t.Error("empty pattern matched")
	}
	if p, ok := matchPolicy([]string{"make  deploy"}, "make deploy"); !ok || p != "make  deploy" {
		t.Errorf("pattern not normalized: %q %v", p, ok)
	}
}

func demoEngine(steps int, interval time.Duration) Engine {
	return NewDemo(Config{DemoSteps: steps, DemoInterval: interval})
}

func TestDemoSteps(t *testing.T) {
	sink := newSink()
	res, err := demoEngine(3, time.Millisecond).Run(context.Background(), Turn{Input: "hello world"}, sink)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := "step 1/3: hello world\nstep 2/3: hello world\nstep 3/3: hello world\n"
	if got := sink.text(Stdout); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if sink.text(Stderr) != "" || len(sink.gateCalls()) != 0 {
		t.Fatal("unexpected stderr or gate")
	}
	sink.check(t)
}

func TestDemoFail(t *testing.T) {
	sink := newSink()
	res, err := demoEngine(5, time.Millisecond).Run(context.Background(), Turn{Input: "fail"}, sink)
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := sink.text(Stdout); got != "step 1/5: fail\n" {
		t.Fatalf("output %q", got)
	}
}

func TestDemoGate(t *testing.T) {
	e := demoEngine(2, time.Millisecond)

	sink := newSink()
	sink.gate = func(context.Context, string) (bool, error) { return true, nil }
	res, err := e.Run(context.Background(), Turn{Input: "gate deploy now"}, sink)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("approved: Run = %+v, %v", res, err)
	}
	if g := sink.gateCalls(); !reflect.DeepEqual(g, []string{"deploy now"}) {
		t.Fatalf("gates %q", g)
	}
	if got := sink.text(Stdout); got != "step 1/2: deploy now\nstep 2/2: deploy now\n" {
		t.Fatalf("output %q", got)
	}

	sink = newSink()
	sink.gate = func(context.Context, string) (bool, error) { return true, nil }
	res, err = e.Run(context.Background(), Turn{Input: "gate fail"}, sink)
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("gate fail: Run = %+v, %v", res, err)
	}

	sink = newSink()
	sink.gate = func(context.Context, string) (bool, error) { return false, nil }
	res, err = e.Run(context.Background(), Turn{Input: "gate deploy now"}, sink)
	var gd *GateDeniedError
	if !errors.As(err, &gd) || gd.Prompt != "deploy now" || res.ExitCode != NoExitCode {
		t.Fatalf("denied: Run = %+v, %v", res, err)
	}
	if sink.text(Stdout) != "" {
		t.Fatal("denied demo produced output")
	}
}

func TestDemoGateCancel(t *testing.T) {
	cause := errors.New("user interrupt")
	ctx, cancel := context.WithCancelCause(context.Background())
	sink := newSink()
	asked := make(chan struct{})
	sink.gate = func(ctx context.Context, _ string) (bool, error) {
		close(asked)
		<-ctx.Done()
		return false, ctx.Err()
	}
	ch := runAsync(ctx, demoEngine(2, time.Millisecond), Turn{Input: "gate ok?"}, sink)
	<-asked
	cancel(cause)
	r := await(t, ch, 10*time.Second)
	if !errors.Is(r.err, cause) {
		t.Fatalf("err = %v, want cause", r.err)
	}
	var gd *GateDeniedError
	if errors.As(r.err, &gd) {
		t.Fatal("cancel reported as denial")
	}
}

func TestDemoCancel(t *testing.T) {
	cause := errors.New("stop it")
	ctx, cancel := context.WithCancelCause(context.Background())
	sink := newSink()
	ch := runAsync(ctx, demoEngine(5, time.Hour), Turn{Input: "x"}, sink)
	sink.waitOutput(t, Stdout, "step 1/5: x\n")
	cancel(cause)
	r := await(t, ch, 10*time.Second)
	if !errors.Is(r.err, cause) || r.res.ExitCode != NoExitCode {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	if got := sink.text(Stdout); got != "step 1/5: x\n" {
		t.Fatalf("output %q", got)
	}

	// Already cancelled: nothing happens.
	sink = newSink()
	if _, err := demoEngine(5, time.Hour).Run(ctx, Turn{Input: "x"}, sink); !errors.Is(err, cause) {
		t.Fatalf("err = %v", err)
	}
	if sink.text(Stdout) != "" {
		t.Fatal("output after cancel")
	}
}
