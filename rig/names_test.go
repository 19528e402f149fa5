package rig_test

import (
	"testing"

	"looprig/rig"
	"looprig/rig/storage"
)

func TestSessionOfLease(t *testing.T) {
	const id = "0b9e3a4e-1111-4222-8333-444455556666"
	for _, tt := range []struct {
		name string
		id   string
		ok   bool
	}{
		{storage.SessionName(id), id, true},
		{storage.CatalogKey(id), "", false},
		{storage.RootLeaseName("ab12"), "", false},
		{storage.SessionName(""), "", false},
		{"other/" + id, "", false},
	} {
		if got, ok := rig.SessionOfLease(tt.name); got != tt.id || ok != tt.ok {
			t.Errorf("SessionOfLease(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.id, tt.ok)
		}
	}
}
