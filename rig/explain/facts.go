package explain

import (
	"looprig/rig/event"
	"looprig/rig/fault"
	"looprig/rig/storage"
)

// Facts are an explanation's typed facts, for presenters to read: one Go
// field per fact any kind carries, named in its comment by the snake_case
// name it has in fault.Explanation.Fields (and in the CLI's JSON errors
// and on the host wire). A fact the explanation does not carry is its field's zero value,
// except where a pointer (or -1) says "absent" because zero is a fact.
// Numbers are read whether they come as this process's uint64, int or
// int64, or as a host's int64 (RemoteError).
//
// Facts is read from Fields in one place (FactsOf), so that no
// presenter looks a fact up by name or asserts its type.
type Facts struct {
	Session   string   // "session": the session's full id; "" when it names none
	Input     *string  // "input": the id as given; nil when absent
	Matches   []string // "matches": the ids an ambiguous prefix matches
	Profile   string   // "profile"
	Known     []string // "known": the profiles or engines known here
	Engine    string   // "engine"
	Field     string   // "field": a profile's field
	Placement string   // "placement"
	Relation  string   // "relation"
	Root      string   // "root": a workspace root
	Store     string   // "store"
	Source    string   // "source": the decider that rejected a drift
	Persisted string   // "persisted"
	Live      string   // "live"

	Changes   []event.Change // "changes": a configuration drift
	Journaled bool           // "journaled": the failed restore wrote its refusal
	Cause     string         // "cause": what went wrong, in words
	CauseType string         // "cause_type": the type of a restore's cause, "" when it names none

	Holder      storage.Holder // "holder": who holds a lease (zero when unknown)
	HolderEpoch uint64         // "holder_epoch"
	Epoch       uint64         // "epoch"
	NewEpoch    uint64         // "new_epoch"
	Reason      string         // "reason"

	Name      string  // "name": a ledger, lease or key
	Path      string  // "path": a file
	Offset    int64   // "offset": a byte offset; -1 when unknown or absent
	Seq       *uint64 // "seq": a journal record; nil when absent
	EventType string  // "event_type"

	TurnID        string // "turn_id"
	Index         int64  // "index": a turn's index
	PGID          int64  // "pgid"
	Host          string // "host": a machine
	PID           int64  // "pid"
	Request       string // "request"
	GateID        string // "gate_id"
	Open          string // "open": the gate that is open
	Client        string // "client": a client's kind
	Via           int64  // "via"
	Checkpointing bool   // "checkpointing"
	Written       int64  // "written"
	Len           int64  // "len"
	WaitedMS      int64  // "waited_ms"

	Stage    string // "stage": a creation's stage
	SeedPath string // "seed_path"

	Dir     string   // "dir": a diverged workspace
	Differs int64    // "differs"
	Paths   []string // "paths"
	Last    string   // "last"
	Lineage string   // "lineage"

	Fix string // "fix": how to fix a socket directory

	ClientProtocol int64  // "client_protocol"
	ServerProtocol int64  // "server_protocol"
	ServerVersion  string // "server_version"
}

// FactsOf returns x's typed facts. A fact whose value has another type
// than the one its field takes is left at the field's zero value.
func FactsOf(x fault.Explanation) Facts {
	f := Facts{Offset: -1}
	for _, fl := range x.Fields {
		if p := f.str(fl.Name); p != nil {
			*p, _ = fl.Value.(string)
			continue
		}
		if p := f.num(fl.Name); p != nil {
			if n, ok := fault.Integer(fl.Value); ok {
				*p = n
			}
			continue
		}
		switch v := fl.Value; fl.Name {
		case "input":
			if s, ok := v.(string); ok {
				f.Input = &s
			}
		case "matches":
			f.Matches, _ = v.([]string)
		case "known":
			f.Known, _ = v.([]string)
		case "paths":
			f.Paths, _ = v.([]string)
		case "changes":
			f.Changes, _ = v.([]event.Change)
		case "holder":
			f.Holder, _ = v.(storage.Holder)
		case "journaled":
			f.Journaled, _ = v.(bool)
		case "checkpointing":
			f.Checkpointing, _ = v.(bool)
		case "holder_epoch", "epoch", "new_epoch", "seq":
			n, ok := fault.Integer(v)
			u := uint64(n)
			switch {
			case !ok || n < 0:
			case fl.Name == "holder_epoch":
				f.HolderEpoch = u
			case fl.Name == "epoch":
				f.Epoch = u
			case fl.Name == "new_epoch":
				f.NewEpoch = u
			default:
				f.Seq = &u
			}
		}
	}
	return f
}

// str is the string field a fact called name is read into; nil for none.
func (f *Facts) str(name string) *string {
	switch name {
	case "session":
		return &f.Session
	case "profile":
		return &f.Profile
	case "engine":
		return &f.Engine
	case "field":
		return &f.Field
	case "placement":
		return &f.Placement
	case "relation":
		return &f.Relation
	case "root":
		return &f.Root
	case "store":
		return &f.Store
	case "source":
		return &f.Source
	case "persisted":
		return &f.Persisted
	case "live":
		return &f.Live
	case "cause":
		return &f.Cause
	case "cause_type":
		return &f.CauseType
	case "reason":
		return &f.Reason
	case "name":
		return &f.Name
	case "path":
		return &f.Path
	case "event_type":
		return &f.EventType
	case "turn_id":
		return &f.TurnID
	case "host":
		return &f.Host
	case "request":
		return &f.Request
	case "gate_id":
		return &f.GateID
	case "open":
		return &f.Open
	case "client":
		return &f.Client
	case "stage":
		return &f.Stage
	case "seed_path":
		return &f.SeedPath
	case "dir":
		return &f.Dir
	case "last":
		return &f.Last
	case "lineage":
		return &f.Lineage
	case "fix":
		return &f.Fix
	case "server_version":
		return &f.ServerVersion
	}
	return nil
}

// num is the signed integer field a fact called name is read into; nil
// for none.
func (f *Facts) num(name string) *int64 {
	switch name {
	case "offset":
		return &f.Offset
	case "index":
		return &f.Index
	case "pgid":
		return &f.PGID
	case "pid":
		return &f.PID
	case "via":
		return &f.Via
	case "written":
		return &f.Written
	case "len":
		return &f.Len
	case "waited_ms":
		return &f.WaitedMS
	case "differs":
		return &f.Differs
	case "client_protocol":
		return &f.ClientProtocol
	case "server_protocol":
		return &f.ServerProtocol
	}
	return nil
}
