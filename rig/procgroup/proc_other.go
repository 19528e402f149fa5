//go:build !linux && !darwin

package procgroup

func bootID() string { return UnknownBoot }

func inspect(Group) (Status, error) { return Unmarked, ErrUnsupported }
