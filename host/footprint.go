package host

import (
	"reflect"
	"unsafe"

	"looprig/rig/event"
)

// footprint estimates the memory an envelope keeps alive while a
// forwarder holds it before its line is queued: the envelope, the boxed
// event and what its strings, slices and maps point to. It counts every
// envelope as this connection's own, although the hub shares a live
// event's text between its subscribers: an envelope a stalled forwarder
// holds stays alive after the hub and the other subscribers let it go.
// forward charges it to the output budget (subscriptions.go).
func footprint(env event.Envelope) int {
	n := int(unsafe.Sizeof(env)) + len(env.Session) + len(env.LoopID)
	switch ev := env.Event.(type) {
	case event.OutputDelta: // the bulk of a live batch
		return n + int(unsafe.Sizeof(ev)) + len(ev.TurnID) + len(ev.Stream) + len(ev.Text)
	case event.TurnOutput: // the bulk of a replayed one
		return n + int(unsafe.Sizeof(ev)) + len(ev.TurnID) + len(ev.Text)
	case nil:
		return n
	}
	v := reflect.ValueOf(env.Event)
	return n + int(v.Type().Size()) + referenced(v)
}

// referenced is what v's strings, slices and maps point to, followed
// through structs, slices and maps (events are value structs: pointers and
// interfaces inside them are not followed).
func referenced(v reflect.Value) int {
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += referenced(v.Field(i))
		}
		return n
	case reflect.Slice, reflect.Array:
		n := 0
		if v.Kind() == reflect.Slice {
			n = v.Cap() * int(v.Type().Elem().Size())
		}
		if holdsReferences(v.Type().Elem()) {
			for i := range v.Len() {
				n += referenced(v.Index(i))
			}
		}
		return n
	case reflect.Map:
		kt, vt := v.Type().Key(), v.Type().Elem()
		// A map's buckets: its keys and values and about a word each of
		// overhead.
		n := v.Len() * (int(kt.Size()) + int(vt.Size()) + 2*int(unsafe.Sizeof(uintptr(0))))
		if holdsReferences(kt) || holdsReferences(vt) {
			it := v.MapRange()
			for it.Next() {
				n += referenced(it.Key()) + referenced(it.Value())
			}
		}
		return n
	}
	return 0
}

// holdsReferences reports whether values of t can hold what referenced
// counts.
func holdsReferences(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return true
	case reflect.Array:
		return holdsReferences(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsReferences(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
