package event

import (
	"fmt"
	"strings"
)

// validator is implemented by the events that have fields with an allowed
// set of values. Marshal and Unmarshal refuse a value outside it
// (*EncodeError, *DecodeError of kind DecodeInvalid).
type validator interface {
	validate() error
}

func oneOf(field, value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return &invalidValue{field: field, value: fmt.Sprintf("%q", value), want: "one of " + strings.Join(allowed, "|")}
}

func (o OutputDelta) validate() error {
	if err := oneOf("stream", o.Stream, StreamStdout, StreamStderr); err != nil {
		return err
	}
	return notNegative("offset", o.Offset)
}

func (t TurnOutput) validate() error { return notNegative("offset", t.Offset) }

func notNegative(field string, n int64) error {
	if n < 0 {
		return &invalidValue{field: field, value: fmt.Sprint(n), want: "0 or more"}
	}
	return nil
}

func (t TurnInterrupted) validate() error {
	return oneOf("reason", t.Reason, ReasonUser, ReasonCrash, ReasonShutdown, ReasonLeaseLost, ReasonEngineStuck, ReasonHandoff)
}

func (g GateResolved) validate() error {
	if err := oneOf("action", g.Action, ActionApprove, ActionDeny, ActionClose); err != nil {
		return err
	}
	return g.By.validate("by")
}

func (c *Client) validate(field string) error {
	if c == nil {
		return nil
	}
	if !printableASCII(c.Kind, MaxClientKind) {
		return &invalidValue{field: field + ".kind", value: fmt.Sprintf("%q", c.Kind), want: fmt.Sprintf("1 to %d printable ASCII characters, no space", MaxClientKind)}
	}
	if c.PID < 0 {
		return &invalidValue{field: field + ".pid", value: fmt.Sprint(c.PID), want: "0 or more"}
	}
	return nil
}

// printableASCII reports whether s is 1 to max printable ASCII
// characters without a space.
func printableASCII(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func (r Refused) validate() error {
	if err := oneOf("what", r.What, RefusedGateAnswer, RefusedInput, RefusedHook, RefusedConversation); err != nil {
		return err
	}
	if r.Action != "" {
		if err := oneOf("action", r.Action, ActionApprove, ActionDeny); err != nil {
			return err
		}
	}
	if r.Reason != "" {
		if err := oneOf("reason", r.Reason, FromTurnCarries, FromTurnGroup, FromTurnGone, FromTurnUnknown); err != nil {
			return err
		}
	}
	if r.Source != "" {
		if err := oneOf("source", r.Source, SourceStream, SourceHook); err != nil {
			return err
		}
	}
	if r.Via < 0 {
		return &invalidValue{field: "via", value: fmt.Sprint(r.Via), want: "0 or more"}
	}
	for _, f := range []struct{ name, value string }{{"hook", r.Hook}, {"id", r.ID}, {"agent", r.Agent}} {
		if f.value != "" && !printableASCII(f.value, MaxRefusedDetail) {
			return &invalidValue{field: f.name, value: fmt.Sprintf("%q", f.value), want: fmt.Sprintf("1 to %d printable ASCII characters, no space", MaxRefusedDetail)}
		}
	}
	return r.By.validate("by")
}

func (w WorkspaceReconciled) validate() error {
	if err := oneOf("action", w.Action, ReconcileUpdated, ReconcileAdopted, ReconcileMovedAside); err != nil {
		return err
	}
	if !isDigestHex(w.Manifest) {
		return &invalidValue{field: "manifest", value: fmt.Sprintf("%q", w.Manifest), want: "64 lower-case hex characters"}
	}
	if w.From != "" && !isDigestHex(w.From) {
		return &invalidValue{field: "from", value: fmt.Sprintf("%q", w.From), want: "64 lower-case hex characters or empty"}
	}
	if w.Differs < 0 {
		return &invalidValue{field: "differs", value: fmt.Sprint(w.Differs), want: "0 or more"}
	}
	return nil
}

func (w WorkspaceReverted) validate() error {
	for _, f := range []struct{ name, value string }{{"manifest", w.Manifest}, {"from", w.From}} {
		if !isDigestHex(f.value) {
			return &invalidValue{field: f.name, value: fmt.Sprintf("%q", f.value), want: "64 lower-case hex characters"}
		}
	}
	if w.TurnIndex < 0 || w.Files < 0 || w.Changed < 0 || w.Removed < 0 {
		return &invalidValue{field: "turn_index", value: fmt.Sprint(w.TurnIndex, w.Files, w.Changed, w.Removed), want: "0 or more"}
	}
	return notNegative("bytes", w.Bytes)
}

func (w WorkspaceCheckpointed) validate() error {
	if err := oneOf("trigger", w.Trigger, TriggerTurn, TriggerStop, TriggerHandoff, TriggerRestore, TriggerRevert, TriggerTurnStart, TriggerFork); err != nil {
		return err
	}
	if !isDigestHex(w.Manifest) {
		return &invalidValue{field: "manifest", value: fmt.Sprintf("%q", w.Manifest), want: "64 lower-case hex characters"}
	}
	if w.Files < 0 || w.Skipped < 0 {
		return &invalidValue{field: "files", value: fmt.Sprint(w.Files, w.Skipped), want: "0 or more"}
	}
	if err := notNegative("read", w.Read); err != nil {
		return err
	}
	return notNegative("bytes", w.Bytes)
}

func (w WorkspaceCheckpointSkipped) validate() error {
	if err := oneOf("trigger", w.Trigger, TriggerTurn, TriggerStop, TriggerHandoff, TriggerTurnStart); err != nil {
		return err
	}
	if err := notNegative("bytes", w.Bytes); err != nil {
		return err
	}
	return notNegative("limit", w.Limit)
}

func (w WorktreeAdded) validate() error {
	for _, f := range []struct{ name, value string }{{"repo", w.Repo}, {"branch", w.Branch}, {"path", w.Path}} {
		if f.value == "" {
			return &invalidValue{field: f.name, value: `""`, want: "not empty"}
		}
	}
	return nil
}

func (a AgentConversation) validate() error {
	return agentFields(a.Agent, a.ID)
}

func (a AgentTranscript) validate() error {
	if err := agentFields(a.Agent, a.ID); err != nil {
		return err
	}
	if !isDigestHex(a.Blob) {
		return &invalidValue{field: "blob", value: fmt.Sprintf("%q", a.Blob), want: "64 lower-case hex characters"}
	}
	return notNegative("bytes", a.Bytes)
}

// agentFields checks an agent event's agent and conversation id: present,
// bounded, printable ASCII without spaces (they name files and go on the
// agent's command line).
func agentFields(agent, id string) error {
	for _, f := range []struct{ name, value string }{{"agent", agent}, {"id", id}} {
		ok := f.value != "" && len(f.value) <= MaxAgentField
		for i := 0; ok && i < len(f.value); i++ {
			c := f.value[i]
			ok = c > ' ' && c < 0x7f && c != '/' && c != '\\'
		}
		if !ok {
			return &invalidValue{field: f.name, value: fmt.Sprintf("%q", f.value), want: fmt.Sprintf("1 to %d printable ASCII characters, no space or slash", MaxAgentField)}
		}
	}
	return nil
}

// isDigestHex reports whether s is a SHA-256 digest in lower-case hex.
func isDigestHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (a Attention) validate() error {
	if err := oneOf("reason", a.Reason, AttentionBell, AttentionOSC9, AttentionOSC777, AttentionAgent); err != nil {
		return err
	}
	if a.Agent != "" && !printableASCII(a.Agent, MaxAgentField) {
		return &invalidValue{field: "agent", value: fmt.Sprintf("%q", a.Agent), want: fmt.Sprintf("1 to %d printable ASCII characters, no space", MaxAgentField)}
	}
	if len(a.Text) > MaxAttentionText {
		return &invalidValue{field: "text", value: fmt.Sprintf("%d bytes", len(a.Text)), want: fmt.Sprintf("at most %d bytes", MaxAttentionText)}
	}
	return nil
}

func (c ConfigurationAdopted) validate() error {
	for i, ch := range c.Changes {
		if err := oneOf(fmt.Sprintf("changes[%d].level", i), ch.Level, LevelInfo, LevelWarn); err != nil {
			return err
		}
	}
	return nil
}

// canonicalizer is implemented by the events whose decoded value has two
// spellings of one meaning; canonical returns the one a re-encoding
// decodes to, so that Unmarshal(Marshal(ev)) equals ev for every decoded ev.
type canonicalizer interface {
	canonical() Event
}

// canonical: an empty manifest is omitted when encoded (omitempty), so
// it decodes as none.
func (c ConfigurationAdopted) canonical() Event {
	if len(c.Manifest) == 0 {
		c.Manifest = nil
	}
	return c
}
