package event

import (
	"reflect"
)

// Info describes one registered event type.
type Info struct {
	Type  Type
	Class Class
	Scope Scope
}

type entry struct {
	info   Info
	goType reflect.Type
	decode func(data []byte) (Event, error)
}

func reg[T Event]() entry {
	var z T
	return entry{
		info:   Info{Type: z.Type(), Class: z.Class(), Scope: z.Scope()},
		goType: reflect.TypeFor[T](),
		decode: func(data []byte) (Event, error) {
			var v T
			if err := strictDecode(data, &v); err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

// entries lists every event type, in declaration order.
var entries = []entry{
	reg[SessionStarted](),
	reg[SessionActive](),
	reg[SessionIdle](),
	reg[SessionStopped](),
	reg[RestoreStarted](),
	reg[RestoreDone](),
	reg[RestoreErrored](),
	reg[ConfigurationAdopted](),
	reg[SessionFaulted](),
	reg[WorkspaceCheckpointed](),
	reg[WorkspaceCheckpointSkipped](),
	reg[HandedOff](),
	reg[WorkspaceReconciled](),
	reg[WorkspaceReverted](),
	reg[AgentConversation](),
	reg[AgentTranscript](),
	reg[WorktreeAdded](),
	reg[LoopStarted](),
	reg[TurnStarted](),
	reg[TurnOutput](),
	reg[OutputDelta](),
	reg[TurnDone](),
	reg[TurnFailed](),
	reg[TurnInterrupted](),
	reg[GateOpened](),
	reg[GateResolved](),
	reg[Attention](),
	reg[AttentionSeen](),
	reg[Refused](),
}

var registry = func() map[Type]*entry {
	m := make(map[Type]*entry, len(entries))
	for i := range entries {
		e := &entries[i]
		if _, dup := m[e.info.Type]; dup {
			panic("event: duplicate type " + string(e.info.Type))
		}
		m[e.info.Type] = e
	}
	return m
}()

// Registered returns every event type with its class and scope, in a
// stable order (session scope first, as declared).
func Registered() []Info {
	out := make([]Info, len(entries))
	for i, e := range entries {
		out[i] = e.info
	}
	return out
}

// Zero returns the zero value of the event type t, and whether t is
// registered.
func Zero(t Type) (Event, bool) {
	e, ok := registry[t]
	if !ok {
		return nil, false
	}
	return reflect.Zero(e.goType).Interface().(Event), true
}
