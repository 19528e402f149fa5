package storage

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest valid name, in bytes.
const MaxNameLen = 512

// MaxSegmentLen is the longest valid segment, in bytes: short enough that a
// file backend can add a suffix and stay within a 255-byte file name.
const MaxSegmentLen = 128

// ValidateName checks the name grammar shared by leases, ledgers and KV
// keys: lowercase segments joined by "/", each matching
// [a-z0-9][a-z0-9_.-]* and at most MaxSegmentLen bytes, no ".." anywhere,
// at most MaxNameLen bytes in all.
// It returns *InvalidNameError when the name breaks a rule.
func ValidateName(name string) error {
	bad := func(reason string) error { return &InvalidNameError{Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxNameLen))
	case strings.Contains(name, ".."):
		return bad(`contains ".."`)
	}
	segStart := true
	segLen := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			if segStart {
				return bad("empty segment")
			}
			segStart = true
			segLen = 0
			continue
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_' || c == '.' || c == '-':
			if segStart {
				return bad(fmt.Sprintf("segment starts with %q", c))
			}
		default:
			return bad(fmt.Sprintf("byte %q at %d is not one of a-z 0-9 _ . - /", c, i))
		}
		segStart = false
		if segLen++; segLen > MaxSegmentLen {
			return bad(fmt.Sprintf("segment longer than %d bytes", MaxSegmentLen))
		}
	}
	if segStart {
		return bad("ends with /")
	}
	return nil
}

// SessionName is the lease and ledger name of a session.
func SessionName(id string) string { return "sessions/" + id }

// SessionOfLease returns the session id a lease or journal name belongs
// to, SessionName's inverse (the name a *LeaseHeldError or a
// *journal.JournalLeaseLostError carries); ok is false for a name that is
// not a session's, such as a workspace root's lease.
func SessionOfLease(name string) (id string, ok bool) {
	id, ok = strings.CutPrefix(name, SessionName(""))
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// CatalogKey is the KV key of a session's catalog entry.
func CatalogKey(id string) string { return "sessions/" + id + "/catalog" }

// RootLeaseName is the lease name of an exclusive workspace root, given the
// hex SHA-256 of its canonical path.
func RootLeaseName(hexSHA256 string) string { return "workspace-roots/" + hexSHA256 }

// ValidateChildPrefix checks the prefix of ChildLister.Children: "" or a
// valid name followed by "/". It returns *InvalidNameError otherwise.
func ValidateChildPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	name, ok := strings.CutSuffix(prefix, "/")
	if !ok {
		return &InvalidNameError{Name: prefix, Reason: `a Children prefix is "" or a name followed by "/"`}
	}
	return ValidateName(name)
}
