package natsstore

import (
	"strings"

	"looprig/rig/storage"
)

// encodeName maps a valid storage name to a subject suffix and KV key:
// '/' becomes '.', '.' becomes '='.
//
// The name grammar ([a-z0-9][a-z0-9_.-]* segments joined by '/', no "..")
// makes this a bijection onto valid NATS tokens and KV keys: segments never
// start with '.', so no token is empty; '=' is legal in subjects and KV keys
// but not in names, so "a.b" (a=b) and "a/b" (a.b) stay apart; a name that
// ends in '.' ends in '=' here, never in a bare '.'; '*' and '>' cannot
// occur. Segments become subject tokens, so "sessions/" is the subject
// filter "sessions.>".
func encodeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '='
		}
		return r
	}, name)
}

// decodeName inverts encodeName.
func decodeName(enc string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '=':
			return '.'
		}
		return r
	}, enc)
}

// keysFilter returns the KV subject filter that covers every key starting
// with prefix: the prefix's complete segments followed by ">", or ">" when
// it has none. ok is false when no valid key can start with prefix.
// Callers still check the prefix on every key the filter yields.
func keysFilter(prefix string) (filter string, ok bool) {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return ">", true
	}
	if storage.ValidateName(prefix[:i]) != nil {
		return "", false
	}
	return encodeName(prefix[:i]) + ".>", true
}
