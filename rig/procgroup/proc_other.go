//go:build !linux && !darwin

package procgroup

func bootID() string { return UnknownBoot }

func inspect(Group) (Status, error) { return Unmarked, ErrUnsupported }

func look(int) (Process, error) { return Process{}, ErrUnsupported }

func processEnviron(int) ([]string, bool) { return nil, false }
func dead(int) (bool, error)              { return false, ErrUnsupported }
