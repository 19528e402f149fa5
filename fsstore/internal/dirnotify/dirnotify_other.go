//go:build !linux

// Package dirnotify is Linux's dnotify; elsewhere Watch fails and callers
// poll.
package dirnotify

import "errors"

// Watch is not available here.
func Watch(string, chan<- struct{}) (func(), error) {
	return nil, errors.New("dnotify is not available on this system")
}

// WatchEntries is not available here.
func WatchEntries(string, chan<- struct{}) (func(), error) {
	return nil, errors.New("dnotify is not available on this system")
}
