package themes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"looprig/internal/atomicfile"
)

// choiceFile is the file in the config directory that remembers the theme.
const choiceFile = "theme"

// LoadChoice returns the persisted theme name ("" when none was saved).
func LoadChoice(configDir string) (string, error) {
	if configDir == "" {
		return "", nil
	}
	b, err := os.ReadFile(filepath.Join(configDir, choiceFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	name := strings.TrimSpace(string(b))
	if len(name) > 64 || !nameRe.MatchString(name) {
		return "", fmt.Errorf("theme choice in %s is not a theme name", filepath.Join(configDir, choiceFile))
	}
	return name, nil
}

// SaveChoice persists name in configDir (created 0700 if needed), atomically.
func SaveChoice(configDir, name string) error {
	if configDir == "" {
		return nil
	}
	if !nameRe.MatchString(name) {
		return fmt.Errorf("not a theme name: %q", name)
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(configDir, choiceFile), []byte(name+"\n"))
}
