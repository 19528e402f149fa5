//go:build !linux

package fsstore

import "errors"

// WatchKey: keys cannot be watched here; callers poll.
func (s *Store) WatchKey(string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("watching keys is not supported on this system")
}
